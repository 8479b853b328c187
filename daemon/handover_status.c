// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Why nobody serves a mount (handover.h): a successor that could not start
 * leaves a line in the runtime directory for `uringfs --stats`, and the
 * daemon that serves the mount again takes it away.  The runtime directory
 * and the names in it are this file's; the take-over socket lives there too.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "handover_status.h"
#include "mount.h"

static uint64_t path_hash(const char *real)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (const char *p = real; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	return h;
}

/*
 * /run/uringfs (root) or $XDG_RUNTIME_DIR/uringfs: made if make_dir, and
 * used only if it is ours alone (owned by us, nobody else may write to it).
 */
static int runtime_dir(char *dir, size_t len, bool make_dir)
{
	const char *runtime = geteuid() ? getenv("XDG_RUNTIME_DIR") : "/run";
	struct stat st;

	if (!runtime || !*runtime)
		return -ENOENT;
	if (snprintf(dir, len, "%s/uringfs", runtime) >= (int)len)
		return -ENAMETOOLONG;
	if (make_dir && mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 0022))
		return -EPERM;
	return 0;
}

int ufs_handover_runtime_name(const char *real, const char *kind, char *path, size_t len,
			      bool make_dir)
{
	char dir[PATH_MAX];
	int ret = runtime_dir(dir, sizeof(dir), make_dir);

	if (ret)
		return ret;
	if (snprintf(path, len, "%s/%s-%u-%016llx", dir, kind, (unsigned int)geteuid(),
		     (unsigned long long)path_hash(real)) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* /run/uringfs (root) or $XDG_RUNTIME_DIR/uringfs, and the mount's file in it. */
static int status_path(const char *real, char *path, size_t len, bool make_dir)
{
	return ufs_handover_runtime_name(real, "not-served", path, len, make_dir);
}

/* fopen(path) in mode how ("r" or "w", the latter creating), never through a symlink. */
static FILE *fopen_nofollow(const char *path, const char *how)
{
	int flags = *how == 'w' ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
	int fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC, 0644);
	FILE *f = fd >= 0 ? fdopen(fd, how) : NULL;

	if (!f && fd >= 0) {
		int err = errno;

		close(fd);
		errno = err;
	}
	return f;
}

void ufs_handover_status(const char *real, const char *why)
{
	char path[PATH_MAX + 64];
	FILE *f;

	if (status_path(real, path, sizeof(path), why != NULL))
		return;
	if (!why) {
		unlink(path);
		return;
	}
	f = fopen_nofollow(path, "w");
	if (!f)
		return;
	fprintf(f, "%s is not served: a successor (pid %d) could not start: %s\n", real,
		(int)getpid(), why);
	fclose(f);
}

int ufs_handover_status_read(const char *mountpoint, char *buf, size_t len)
{
	char real[PATH_MAX], path[PATH_MAX + 64];
	FILE *f;
	int ret;

	ret = ufs_mount_real_path(mountpoint, real, sizeof(real));
	if (!ret)
		ret = status_path(real, path, sizeof(path), false);
	if (ret)
		return ret;
	f = fopen_nofollow(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return buf[0] ? 0 : -ENOENT;
}
