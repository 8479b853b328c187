/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode store's entries that come back (inode_revive.c): from an
 * export record (LOOKUP "."), and at a successor's start from the
 * predecessor's record and the export store.  The structs are in inode.h.
 */
#ifndef UFS_INODE_REVIVE_H
#define UFS_INODE_REVIVE_H

#include <stdint.h>

struct ufs_inode;
struct ufs_inode_store;
struct ufs_record_node;

/*
 * The inode of a node id the kernel forgot, from its export record,
 * pinned for the request; NULL (ESTALE) if none or no longer inside SOURCE.
 */
struct ufs_inode *ufs_inode_revive(struct ufs_inode_store *inodes, uint64_t nodeid);
/* Before the first request: a node id of a predecessor's record or the export store. */
int ufs_inode_restore(struct ufs_inode_store *inodes, uint32_t slot,
		      const struct ufs_record_node *n);
void ufs_inode_restore_done(struct ufs_inode_store *inodes, uint64_t next_nodeid);

#endif /* UFS_INODE_REVIVE_H */
