/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode store's file handles and mount descriptors (inode_handle.c):
 * whether name_to_handle_at/open_by_handle_at work on SOURCE, and one
 * descriptor per mount met, which open_by_handle_at needs.
 */
#ifndef UFS_INODE_HANDLE_H
#define UFS_INODE_HANDLE_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

struct ufs_config;
struct ufs_confine;

/* In the inode store (store->handles). */
struct ufs_handles {
	/* set at init, before the first request; read without a lock */
	const struct ufs_config *cfg;	/* inode_handles */
	const struct ufs_confine *confine;	/* proc_fd, root_fd */
	bool usable;			/* name_to_handle_at/open_by_handle_at usable */
	const char *off_reason;		/* why not (--stats), NULL: usable */
	bool unprivileged;		/* not usable for want of CAP_DAC_READ_SEARCH */
	/*
	 * Protected by lock, a leaf: nothing is taken under it, and nothing
	 * that blocks runs under it.  A descriptor, once in, stays open
	 * until ufs_inode_handles_destroy: inodes and export records keep
	 * the number without a lock.
	 */
	pthread_mutex_t lock;
	struct ufs_mount_fd {
		int mount_id;
		int fd;
	} mount_fds[64];
	unsigned int nmount_fds;
};

void ufs_inode_handles_setup(struct ufs_handles *h, const struct ufs_config *cfg,
			     const struct ufs_confine *confine);
int ufs_inode_handles_probe(struct ufs_handles *h);
void ufs_inode_handles_destroy(struct ufs_handles *h);
int ufs_inode_handle_make(struct ufs_handles *h, int fd, mode_t type,
			  struct file_handle **handle, int *mount_fd, int *mount_id);
int ufs_inode_handle_mount_fd(struct ufs_handles *h, int mount_id);

#endif /* UFS_INODE_HANDLE_H */
