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

#include "fs.h"
#include "log.h"

/*
 * Is the object behind fd inside SOURCE?  A directory renamed out of SOURCE
 * on the backing file system keeps its descriptor, so a lookup through it
 * would reach outside.  The kernel's own spelling of the descriptor's path
 * (/proc/self/fd/N) tells where it is now.  Returns 0 or -ENOENT.
 */
int ufs_check_beneath_fd(struct ufs_fs *fs, int fd)
{
	char name[32], path[PATH_MAX];
	ssize_t n;

	if (fs->root_path_len == 1)
		return 0;	/* SOURCE is / */
	snprintf(name, sizeof(name), "%d", fd);
	n = readlinkat(fs->proc_fd, name, path, sizeof(path));
	if (n < 0 && errno == ENAMETOOLONG)
		return ufs_confine_memo_check(fs, fd);	/* confine_memo.c */
	if (n < 0)
		return -errno;
	if ((size_t)n >= fs->root_path_len && !memcmp(path, fs->root_path, fs->root_path_len) &&
	    ((size_t)n == fs->root_path_len || path[fs->root_path_len] == '/'))
		return 0;
	ufs_log_once(UFS_LOG_WARN, "refused to reach outside the source directory: %.*s was moved out of it",
		     (int)n, path);
	return -ENOENT;
}

int ufs_inode_check_beneath(struct ufs_fs *fs, struct ufs_inode *inode)
{
	if (inode == fs->root || inode->control)
		return 0;
	return ufs_check_beneath_fd(fs, inode->fd);
}

/*
 * A directory moved out of SOURCE stays out of reach through descriptors the
 * clients hold on it: its listing, attributes and extended attributes too,
 * not only the names in it.  Files keep working, as open files would
 * locally wherever they are moved.
 */
int ufs_inode_dir_beneath(struct ufs_fs *fs, struct ufs_inode *inode)
{
	return inode->type == S_IFDIR ? ufs_inode_check_beneath(fs, inode) : 0;
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
