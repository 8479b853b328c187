// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The export store's lock (store.h): one daemon per store file.
 *
 * Two daemons on one SOURCE with the same DIR would share one store: the
 * second one's compaction renames a new file over the store while the first
 * keeps writing into the unlinked old one (its later handles are stale
 * after a restart), and two starting at once would both take the old
 * generation + 1, so node ids, and after a restart handles, could name the
 * other mount's files.  So the store is used only under flock(LOCK_EX) on
 * "NAME.lock" in DIR, a file of its own that the compaction's rename never
 * replaces, held from before the store is read until the daemon exits (the
 * kernel drops it then, however it exits).  The lock file passes the store
 * file's checks: the daemon's, regular, mode 0600, one link, not followed.
 *
 * A take-over: the predecessor unlocks once paused (it writes no record
 * after that) and the successor locks the store when it opens it; a failed
 * take-over relocks, and if a successor replaced the store meanwhile the
 * predecessor's file is no longer the store: it stops writing records.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store_lock.h"

int ufs_store_lock(struct ufs_store *s, const char *dir, char *why, size_t len)
{
	char name[sizeof(s->name) + 8];
	struct stat st;
	int fd, e;

	snprintf(name, sizeof(name), "%s.lock", s->name);
	fd = openat(s->dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, len, "%s/%s: %s", dir, name,
			 errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return errno == ELOOP ? -EPERM : -errno;
	}
	if (fstat(fd, &st)) {
		snprintf(why, len, "%s/%s: %s", dir, name, strerror(errno));
	} else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
		   st.st_nlink != 1) {
		snprintf(why, len, "%s/%s: not a regular file of uid %u, mode 0600, one link", dir,
			 name, (unsigned int)geteuid());
		errno = EPERM;
	} else if (flock(fd, LOCK_EX | LOCK_NB)) {
		if (errno == EWOULDBLOCK)
			errno = EBUSY;
		snprintf(why, len, "%s/%s: %s", dir, name,
			 errno == EBUSY ? "locked: another uringfs daemon uses this store "
					  "(the same SOURCE with the same export_store)"
					: strerror(errno));
	} else {
		s->lock_fd = fd;
		return 0;
	}
	e = errno;
	close(fd);
	return -e;
}

void ufs_store_unlock(struct ufs_store *s)
{
	if (s->lock_fd >= 0)
		flock(s->lock_fd, LOCK_UN);
}

void ufs_store_relock(struct ufs_store *s)
{
	struct stat mine, now;

	if (s->lock_fd < 0 || s->fd < 0)
		return;
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) || fstat(s->fd, &mine) ||
	    fstatat(s->dir_fd, s->name, &now, AT_SYMLINK_NOFOLLOW) || mine.st_dev != now.st_dev ||
	    mine.st_ino != now.st_ino) {
		ufs_warn("export store %s: no longer this daemon's after the failed take-over; "
			 "no more records are kept, so handles of newer files will not outlive "
			 "this daemon",
			 s->name);
		s->failed = true;
	}
}

/*
 * DIR's parents: one that another user owns or may write to (without the
 * sticky bit) lets that user move DIR away and put one of theirs in its
 * place, which the checks refuse, so the daemon would not start (or, for
 * a missing DIR, make it first).  Nothing unsafe is used, so a warning.
 */
void ufs_store_check_parents(const char *dir)
{
	char path[4096], *slash;
	struct stat st;

	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return;
	while ((slash = strrchr(path, '/'))) {
		slash[slash == path] = '\0'; /* keep "/" itself */
		if (stat(path, &st))
			return;
		if ((st.st_uid && st.st_uid != geteuid()) ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			ufs_warn("export_store: %s's parent %s is owned by uid %u, mode %04o: "
				 "another user could replace %s and stop the daemon's start",
				 dir, path, (unsigned int)st.st_uid,
				 (unsigned int)(st.st_mode & 07777), dir);
			return;
		}
		if (slash == path)
			return;
	}
}
