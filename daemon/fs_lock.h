/* SPDX-License-Identifier: GPL-2.0-or-later */
/* POSIX, OFD and flock locks (fs_lock.c). */
#ifndef UFS_FS_LOCK_H
#define UFS_FS_LOCK_H

#include <stdint.h>

struct ufs_fs;
struct ufs_inode;

void ufs_lock_release_owner(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t owner);
void ufs_lock_release_fh(struct ufs_inode *inode, uint64_t fh);
void ufs_lock_release_all(struct ufs_inode *inode);

#endif /* UFS_FS_LOCK_H */
