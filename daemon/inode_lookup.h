/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode store's entries found by name (inode_lookup.c).  The structs
 * are in inode.h.
 */
#ifndef UFS_INODE_LOOKUP_H
#define UFS_INODE_LOOKUP_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct ufs_inode;
struct ufs_inode_store;

/*
 * Account one kernel lookup for the object fd refers to (fd: ownership
 * taken; -1 for the control file), found through parent.  0 and the inode
 * in *out, or a negative errno.
 */
int ufs_inode_find_or_insert(struct ufs_inode_store *inodes, int fd, const struct stat *st,
			     uint64_t parent, struct ufs_inode **out);
/* One more kernel lookup of an inode a request holds (LOOKUP "."). */
void ufs_inode_add_lookup(struct ufs_inode_store *inodes, struct ufs_inode *inode);
/* A name of (dev, ino) now lives in parent (RENAME). */
void ufs_inode_moved(struct ufs_inode_store *inodes, dev_t dev, ino_t ino, uint64_t parent);
/*
 * A name of (dev, ino) was removed; nlink: the links it has left.  An
 * inode that lost its last one while pinned is returned with one more
 * ref (the caller puts it, and may wait before: ufs_inode_pinned_by_others);
 * otherwise NULL.
 */
struct ufs_inode *ufs_inode_unlinked(struct ufs_inode_store *inodes, dev_t dev, ino_t ino,
				     nlink_t nlink);
/* For inode_revive.c: a node id from the export records is live again, under inode_lock. */
void ufs_inode_record_revived_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode,
				     uint32_t slot);

#endif /* UFS_INODE_LOOKUP_H */
