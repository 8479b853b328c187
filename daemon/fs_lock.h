/* SPDX-License-Identifier: GPL-2.0-or-later */
/* POSIX, OFD and flock locks (fs_lock.c). */
#ifndef UFS_FS_LOCK_H
#define UFS_FS_LOCK_H

#include <stddef.h>
#include <stdint.h>

struct ufs_fs;
struct ufs_inode;

void ufs_lock_release_owner(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t owner);
void ufs_lock_release_fh(struct ufs_inode *inode, uint64_t fh);
void ufs_lock_release_all(struct ufs_inode *inode);

/*
 * ---- take-over (handover_socket.c, restore.c) ----
 *
 * A POSIX lock owner's open file description, which holds its locks, and
 * what the lock table keys it by: what a successor needs to keep them.
 */
struct ufs_lock_owner_state {
	uint64_t nodeid;		/* the inode it is on */
	uint64_t owner;			/* the kernel's lock owner */
	uint64_t fh;			/* the open it last locked through */
	uint32_t uid;			/* charged for fd (budget.h) */
	int32_t pid;			/* the process that last locked through it */
	int fd;				/* the description */
};

/*
 * Every lock owner's, each with a duplicate of its descriptor, for a paused
 * daemon's hand-over.  Returns 0 (*v NULL when there are none) or -errno.
 */
int ufs_lock_owners_collect(struct ufs_fs *fs, struct ufs_lock_owner_state **v, size_t *n);
/* Close the descriptors collect duplicated and free v. */
void ufs_lock_owners_free(struct ufs_lock_owner_state *v, size_t n);
/*
 * A predecessor's lock owner, back on its inode: takes s->fd (closed on
 * error).  Returns 0, or -ESTALE when the inode is gone.
 */
int ufs_lock_owner_restore(struct ufs_fs *fs, const struct ufs_lock_owner_state *s);

#endif /* UFS_FS_LOCK_H */
