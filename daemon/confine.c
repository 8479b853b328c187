// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * SOURCE's boundary: whether what a descriptor names is still inside it
 * (the confinement rules are in fs.h).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"
#include "confine_memo.h"
#include "log.h"

int ufs_confine_init(struct ufs_confine *c, int root_fd, int proc_fd, dev_t dev, ino_t ino)
{
	char name[32];
	ssize_t n;

	c->root_fd = root_fd;
	c->proc_fd = proc_fd;
	c->root_dev = dev;
	c->root_ino = ino;
	c->memo = NULL;
	snprintf(name, sizeof(name), "%d", root_fd);
	n = readlinkat(proc_fd, name, c->root_path, sizeof(c->root_path) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	c->root_path[n] = '\0';
	c->root_path_len = n;
	return 0;
}

/* Called once SOURCE's root is open; without the memory, deep checks walk. */
void ufs_confine_memo_start(struct ufs_confine *c)
{
	if (c->root_path_len == 1)
		return;	/* SOURCE is /: nothing is outside */
	c->memo = ufs_confine_memo_new(c->root_fd);
}

void ufs_confine_destroy(struct ufs_confine *c)
{
	ufs_confine_memo_free(c->memo);
	c->memo = NULL;
}

/*
 * Is the object behind fd inside SOURCE?  A directory renamed out of SOURCE
 * on the backing file system keeps its descriptor, so a lookup through it
 * would reach outside.  The kernel's own spelling of the descriptor's path
 * (/proc/self/fd/N) tells where it is now.  Returns 0 or -ENOENT.
 */
int ufs_check_beneath_fd(const struct ufs_confine *c, int fd)
{
	char name[32], path[PATH_MAX];
	ssize_t n;

	if (c->root_path_len == 1)
		return 0;	/* SOURCE is / */
	snprintf(name, sizeof(name), "%d", fd);
	n = readlinkat(c->proc_fd, name, path, sizeof(path));
	if (n < 0 && errno == ENAMETOOLONG)
		return ufs_confine_memo_check(c->memo, fd, c->root_dev, c->root_ino);
	if (n < 0)
		return -errno;
	if ((size_t)n >= c->root_path_len && !memcmp(path, c->root_path, c->root_path_len) &&
	    ((size_t)n == c->root_path_len || path[c->root_path_len] == '/'))
		return 0;
	ufs_log_once(UFS_LOG_WARN, "refused to reach outside the source directory: %.*s was moved out of it",
		     (int)n, path);
	return -ENOENT;
}

/* A directory on another mount than SOURCE's: never remembered, never drains. */
#define BENEATH_UNWATCHED UINT64_MAX

/*
 * ufs_check_beneath_fd for a directory, remembered in *seen (the caller's,
 * one per directory, read and written atomically) until a directory moves
 * on SOURCE's file system: only a move can take a directory out of SOURCE,
 * and the memory's watch drains every move queued before this check began
 * (the kernel queues it inside vfs_rename(), confine_memo.c).  A directory
 * on another mount is checked every time (a mount's change raises no
 * event), and marked so once: its checks skip the drain.  Saves the
 * readlink, which costs more than the request it guards on small calls
 * (rm -rf: an UNLINK and a GETATTR of the parent per file).
 */
int ufs_check_beneath_dir(const struct ufs_confine *c, int fd, uint64_t *seen)
{
	uint64_t known = __atomic_load_n(seen, __ATOMIC_RELAXED), moves;
	int ret;

	if (known == BENEATH_UNWATCHED)
		return ufs_check_beneath_fd(c, fd);
	moves = ufs_confine_memo_moves(c->memo);
	if (moves && known == moves)
		return 0;
	ret = ufs_check_beneath_fd(c, fd);
	if (!ret && moves)
		__atomic_store_n(seen, ufs_confine_memo_watched(c->memo, fd) ? moves : BENEATH_UNWATCHED,
				 __ATOMIC_RELAXED);
	return ret;
}

/*
 * Is the file (dev, ino) still a name in the directory dir_fd (O_PATH)?  A
 * file other than a directory cannot be walked up, so a file revived from a
 * handle is looked for where it was last seen, as exportfs_get_name() does
 * for a disconnected dentry: a file moved out of SOURCE, or anywhere else,
 * is not found.  Returns 0 or -ESTALE.
 */
int ufs_check_in_dir(int dir_fd, dev_t dev, ino_t ino)
{
	char buf[8192];
	int fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret = -ESTALE;
	long n;

	if (fd < 0)
		return -ESTALE;
	while (ret && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; ret && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			struct stat st;

			off += d->d_reclen;
			/* d_ino is a hint (overlayfs, btrfs subvolumes): the stat decides. */
			if (d->d_ino == ino &&
			    !fstatat(fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
			    st.st_dev == dev && st.st_ino == ino)
				ret = 0;
		}
	}
	close(fd);
	return ret;
}
