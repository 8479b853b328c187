// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mount -o remount.  mount(8) runs the helper again, as
 * "uringfs SOURCE MOUNTPOINT -o ro,relatime,remount,user_id=0,...": every
 * option of the mount table and of fstab, the new ones among them.  No
 * daemon starts: the kernel changes the mount's flags and the serving
 * daemon goes on.
 *
 * FUSE takes a remount through mount(2) with MS_REMOUNT and applies only
 * the superblock's flags (read-only), ignoring its own options there
 * (fs/fuse/inode.c, fuse_parse_param: "Ignore options coming from
 * mount(MS_REMOUNT) for backward compatibility"); the VFS sets the mount's
 * own flags (noexec, atime ...) from the same call (fs/namespace.c,
 * do_remount).  Read-only is then the kernel's to enforce, as for any file
 * system.  The rest of the list (the kernel's FUSE options, the daemon's
 * settings) is fixed while the mount lives and stays as the serving daemon
 * has it; a new daemon with new settings is uringfs --take-over.  Flags the
 * daemon decided its serving by (suid, dev, noatime, nodiratime: the data
 * path, device nodes, O_NOATIME) may not change here.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include "linux_abi.h"
#include "mount.h"
#include "remount.h"

struct remount_flag {
	const char *set, *clear;	/* the words that set and clear it */
	unsigned long ms;		/* for mount(2) */
	unsigned long st;		/* in statvfs's f_flag; 0: not shown there */
	bool fixed;			/* the daemon served by it: no change */
};

static const struct remount_flag flags[] = {
	{ "ro", "rw", MS_RDONLY, ST_RDONLY, false },
	{ "noexec", "exec", MS_NOEXEC, ST_NOEXEC, false },
	{ "sync", "async", MS_SYNCHRONOUS, ST_SYNCHRONOUS, false },
	{ "dirsync", NULL, MS_DIRSYNC, 0, false },
	{ "nosymfollow", "symfollow", MS_NOSYMFOLLOW, ST_NOSYMFOLLOW, false },
	{ "relatime", NULL, MS_RELATIME, ST_RELATIME, false },
	{ "nosuid", "suid", MS_NOSUID, ST_NOSUID, true },
	{ "nodev", "dev", MS_NODEV, ST_NODEV, true },
	{ "noatime", "atime", MS_NOATIME, ST_NOATIME, true },
	{ "nodiratime", "diratime", MS_NODIRATIME, ST_NODIRATIME, true },
};

#define FLAG_COUNT (sizeof(flags) / sizeof(flags[0]))

/* One word's effect on *ms; a word that is no mount flag has none. */
static void remount_word(const char *word, unsigned long *ms)
{
	for (size_t i = 0; i < FLAG_COUNT; i++) {
		if (!strcmp(word, flags[i].set))
			*ms |= flags[i].ms;
		else if (flags[i].clear && !strcmp(word, flags[i].clear))
			*ms &= ~flags[i].ms;
	}
}

bool ufs_remount_asked(const char *optstr)
{
	size_t n = strlen("remount");

	for (const char *p = optstr; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, "remount", n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

/* The words of optstr that are mount flags, into *ms (the rest is left as it is). */
static void remount_flags(const char *optstr, unsigned long *ms)
{
	char word[64];

	for (const char *p = optstr; *p;) {
		size_t len = strcspn(p, ",");

		if (len < sizeof(word)) {
			memcpy(word, p, len);
			word[len] = '\0';
			remount_word(word, ms);
		}
		p += len + (p[len] == ',');
	}
}

int ufs_remount(const char *mountpoint, const char *optstr)
{
	unsigned long ms, now = 0;
	char real[PATH_MAX];
	struct statvfs sv;

	if (ufs_mount_real_path(mountpoint, real, sizeof(real)) || ufs_mount_conn_of(real) < 0) {
		fprintf(stderr, "uringfs: remount: no uringfs mount at %s\n", mountpoint);
		return 1;
	}
	if (statvfs(real, &sv)) {
		fprintf(stderr, "uringfs: remount: %s: %m\n", mountpoint);
		return 1;
	}
	/* Words not given keep the mount's present state. */
	for (size_t i = 0; i < FLAG_COUNT; i++) {
		if (flags[i].st && (sv.f_flag & flags[i].st))
			now |= flags[i].ms;
	}
	ms = now;
	remount_flags(optstr, &ms);
	for (size_t i = 0; i < FLAG_COUNT; i++) {
		if (flags[i].fixed && (ms & flags[i].ms) != (now & flags[i].ms)) {
			fprintf(stderr,
				"uringfs: remount: %s cannot change on a live mount "
				"(the daemon serves by it): unmount and mount again\n",
				ms & flags[i].ms ? flags[i].set : flags[i].clear);
			return 1;
		}
	}
	if (mount(NULL, real, NULL, MS_REMOUNT | ms, NULL)) {
		fprintf(stderr, "uringfs: remount of %s: %m\n", mountpoint);
		return 1;
	}
	return 0;
}
