// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * mount -o remount.  mount(8) runs the helper again, as
 * "uringfs SOURCE MOUNTPOINT -o rw,nosuid,relatime,remount,user_id=0,...":
 * the new option list whole (the fstab line's options if there is one,
 * else the mount table's; libmount has already merged the words asked
 * for and dropped cancelling pairs, so a flag turned off arrives as a
 * missing word: "remount,exec" on a noexec mount comes without noexec and
 * without exec).  No daemon starts: the kernel changes the mount's flags
 * and the serving daemon goes on.
 *
 * FUSE takes a remount through mount(2) with MS_REMOUNT and applies only
 * the superblock's flags (read-only, sync), ignoring its own options there
 * (fs/fuse/inode.c, fuse_parse_param: "Ignore options coming from
 * mount(MS_REMOUNT) for backward compatibility"); the VFS sets the mount's
 * own flags (noexec, nodev, nosymfollow ...) from the same call
 * (fs/namespace.c, do_remount), keeping the atime flags when no atime word
 * is given.  Read-only is then the kernel's to enforce, as for any file
 * system.  The rest of the list (the kernel's FUSE options, the daemon's
 * settings) is fixed while the mount lives: a word of it is taken only
 * when it changes nothing (the fstab line passed back, the mount table's
 * allow_other), else the remount is refused naming it (running.c).  A new
 * daemon with new settings is uringfs --take-over.
 *
 * So the new flags are built from the words alone: a flag is set if its
 * word is there.  Two the daemon decided its serving by keep their state
 * when no word names them and may not change: noatime (backing files are
 * opened O_NOATIME; the kernel's own atime flags do nothing on FUSE) and
 * suid turned on (the data path was chosen for a nosuid mount: io_path.c);
 * suid to nosuid is safe.  dirsync is a superblock flag the kernel does
 * not change on a remount (MS_RMT_MASK).  nodiratime is the daemon's alone
 * (never a kernel flag of a uringfs mount): running.c holds it to the
 * running daemon's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "mount.h"
#include "remount.h"
#include "running.h"

/* Flags the words set (on) and clear (off): a word absent is off. */
static const struct {
	const char *on, *off;
	unsigned long ms;
} plain[] = {
	{ "ro", "rw", MS_RDONLY },
	{ "noexec", "exec", MS_NOEXEC },
	{ "sync", "async", MS_SYNCHRONOUS },
	{ "nodev", "dev", MS_NODEV },
	{ "nosymfollow", "symfollow", MS_NOSYMFOLLOW },
};

#define PLAIN_COUNT (sizeof(plain) / sizeof(plain[0]))

enum word_state { ABSENT, ON, OFF };

struct remount_words {
	unsigned long ms; /* the plain flags asked for */
	enum word_state nosuid, noatime, dirsync;
};

static int remount_word(char *word, void *arg)
{
	struct remount_words *w = arg;

	for (size_t i = 0; i < PLAIN_COUNT; i++) {
		if (!strcmp(word, plain[i].on))
			w->ms |= plain[i].ms;
		else if (!strcmp(word, plain[i].off))
			w->ms &= ~plain[i].ms;
	}
	if (!strcmp(word, "nosuid") || !strcmp(word, "suid"))
		w->nosuid = !strcmp(word, "nosuid") ? ON : OFF;
	if (!strcmp(word, "noatime"))
		w->noatime = ON;
	else if (!strcmp(word, "atime") || !strcmp(word, "relatime"))
		w->noatime = OFF;
	if (!strcmp(word, "dirsync"))
		w->dirsync = ON;
	return 0;
}

static int refuse(const char *mountpoint, const char *word, const char *why)
{
	fprintf(stderr,
		"uringfs: remount %s: %s cannot change on a live uringfs mount (%s): "
		"unmount and mount again\n",
		mountpoint, word, why);
	return 1;
}

/* The flags for mount(2), or refused (1, one line on stderr). */
static int remount_flags(const char *mountpoint, const struct remount_words *w, const char *opts,
			 const char *super, unsigned long *ms)
{
	bool nosuid_now = ufs_words_have(opts, "nosuid"), noatime_now = ufs_words_have(opts, "noatime");
	bool nosuid = w->nosuid == ABSENT ? nosuid_now : w->nosuid == ON;

	if (nosuid_now && !nosuid)
		return refuse(mountpoint, "suid",
			      "the daemon chose its data path for a nosuid mount");
	if (w->noatime != ABSENT && (w->noatime == ON) != noatime_now)
		return refuse(mountpoint, noatime_now ? "atime" : "noatime",
			      "the daemon keeps atime by how it opens the backing files");
	if ((w->dirsync == ON) != ufs_words_have(super, "dirsync"))
		return refuse(mountpoint, "dirsync", "the kernel keeps it as mounted");
	*ms = w->ms | (nosuid ? MS_NOSUID : 0) | (w->noatime == ON ? MS_NOATIME : 0);
	return 0;
}

int ufs_remount(const char *mountpoint, const char *optstr)
{
	struct remount_words w = { 0 };
	struct ufs_config_error err;
	char proc[64], super[1024], opts[sizeof(super)];
	unsigned long ms;
	long conn;
	int fd, ret = 1;

	if (ufs_mount_opts_each(optstr, remount_word, &w, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return 1;
	}
	/*
	 * The mount itself, not whatever is mounted on top of it later: one
	 * descriptor, checked by its mount id, named in every call after.
	 */
	fd = open(mountpoint, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	/* Its flags from mountinfo, not statvfs: a STATFS would wait on a stopped daemon. */
	if (fd < 0 || (conn = ufs_mount_conn_of_fd(fd, super, opts, sizeof(super))) < 0) {
		fprintf(stderr, "uringfs: remount: no uringfs mount at %s\n", mountpoint);
		goto out;
	}
	if (remount_flags(mountpoint, &w, opts, super, &ms) ||
	    ufs_running_check(mountpoint, conn, super, optstr))
		goto out;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (mount(NULL, proc, NULL, MS_REMOUNT | ms, NULL)) {
		if (errno == EBUSY && (ms & MS_RDONLY))
			fprintf(stderr,
				"uringfs: remount of %s read-only: a file is open for "
				"writing there (EBUSY)\n",
				mountpoint);
		else
			fprintf(stderr, "uringfs: remount of %s: %m\n", mountpoint);
		goto out;
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}
