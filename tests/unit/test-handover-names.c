// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: what the hand-over and the transport states print or name,
 * which other processes read: the states' text in the log, the control
 * file and STATUS= (tests and dashboards read them), and the runtime names
 * of the take-over socket and the status file (a daemon of the previous
 * build must find a new one's socket, and the other way round).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "handover_status.h"
#include "tap.h"

/* The name's hash as the daemons before the split computed it: FNV-1a of the real path. */
static unsigned long long fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (unsigned long long)h;
}

static void runtime_names(void)
{
	char dir[] = "/tmp/ufs-test-handover-XXXXXX", path[512], want[1024], run[256];
	const char *real = "/mnt/some where/ü";
	int ret;

	/* Root's runtime directory is /run/uringfs; a user's $XDG_RUNTIME_DIR/uringfs. */
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp: %m");
		return;
	}
	setenv("XDG_RUNTIME_DIR", dir, 1);
	snprintf(run, sizeof(run), "%s/uringfs", geteuid() ? dir : "/run");
	ret = ufs_handover_runtime_name(real, "takeover", path, sizeof(path), true);
	is_int(ret, 0, "the take-over socket's name is made");
	snprintf(want, sizeof(want), "%s/takeover-%u-%016llx", run, (unsigned int)geteuid(),
		 fnv1a(real));
	is_str(path, want, "the take-over socket's name is <runtime>/takeover-<uid>-<fnv1a>");
	ret = ufs_handover_runtime_name(real, "not-served", path, sizeof(path), false);
	is_int(ret, 0, "the status file's name is made");
	snprintf(want, sizeof(want), "%s/not-served-%u-%016llx", run, (unsigned int)geteuid(),
		 fnv1a(real));
	is_str(path, want, "the status file's name is <runtime>/not-served-<uid>-<fnv1a>");
	is_int(ufs_handover_runtime_name(real, "takeover", path, 8, false), -ENAMETOOLONG,
	       "a name that does not fit is refused, not cut");
	if (geteuid()) {
		unsetenv("XDG_RUNTIME_DIR");
		is_int(ufs_handover_runtime_name(real, "takeover", path, sizeof(path), false),
		       -ENOENT, "a user without XDG_RUNTIME_DIR has no runtime directory");
	}
	snprintf(run, sizeof(run), "%s/uringfs", dir);
	rmdir(run);
	rmdir(dir);
}

int main(void)
{
	is_str(ufs_queue_mode_name(UFS_QUEUE_NONE), "-", "queue_mode on /dev/fuse");
	is_str(ufs_queue_mode_name(UFS_QUEUE_PER_ENTRY), "per-entry", "queue_mode per-entry");
	is_str(ufs_queue_mode_name(UFS_QUEUE_BUFPOOL), "bufpool", "queue_mode bufpool");
	is_str(ufs_zero_copy_state_name(UFS_ZC_OFF), "off", "zero_copy off");
	is_str(ufs_zero_copy_state_name(UFS_ZC_ON), "on", "zero_copy on");
	is_str(ufs_zero_copy_state_name(UFS_ZC_EPERM), "eperm", "zero_copy eperm");
	is_str(ufs_zero_copy_state_name(UFS_ZC_EINVAL), "einval", "zero_copy einval");
	runtime_names();
	return t_done();
}
