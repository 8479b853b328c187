/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * SOURCE's boundary (confine.c): whether what a descriptor names is still
 * inside SOURCE.  The confinement rules every handler keeps are in fs.h.
 */
#ifndef UFS_CONFINE_H
#define UFS_CONFINE_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_confine_memo;

/*
 * SOURCE as the checks see it, in the file system (fs->confine).  Set by
 * ufs_fs_init before any request; proc_fd is set again once by
 * ufs_fs_reopen_proc, before the first request.  Read without a lock;
 * the memory locks itself.
 */
struct ufs_confine {
	int root_fd;			/* O_PATH, SOURCE (the root inode owns it) */
	int proc_fd;			/* /proc/self/fd */
	char root_path[PATH_MAX];	/* as the kernel spells it, for check_beneath */
	size_t root_path_len;
	dev_t root_dev;			/* SOURCE's root, for the walk up */
	ino_t root_ino;
	struct ufs_confine_memo *memo;	/* or NULL: deep checks walk */
};

/* SOURCE's path read through proc_fd: 0 or a negative errno. */
int ufs_confine_init(struct ufs_confine *c, int root_fd, int proc_fd, dev_t dev, ino_t ino);
/* The memory of deep directories, where it can be kept (confine_memo.c). */
void ufs_confine_memo_start(struct ufs_confine *c);
void ufs_confine_destroy(struct ufs_confine *c);

/* 0 if inside SOURCE, else -ENOENT */
int ufs_check_beneath_fd(const struct ufs_confine *c, int fd);
/* The same for a directory, remembered in *seen while no directory moves */
int ufs_check_beneath_dir(const struct ufs_confine *c, int fd, uint64_t *seen);
int ufs_check_in_dir(int dir_fd, dev_t dev, ino_t ino);

#endif /* UFS_CONFINE_H */
