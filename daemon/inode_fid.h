/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode store's index by file handle (inode_fid.c): fanotify names
 * what changed by its file handle, and the coherence watcher
 * (coherence_event.c) finds the inodes the kernel holds for it here.  The
 * index knows only its nodes (struct ufs_fid_node, in struct ufs_inode), so
 * that it needs nothing of inode.h; every call is made under the store's
 * inode_lock.
 */
#ifndef UFS_INODE_FID_H
#define UFS_INODE_FID_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* inode->coh_sent: what the watcher's last invalidation dropped (coherence_event.c) */
#define UFS_COH_SENT_ATTR 1	/* attributes and ACLs (FUSE_NOTIFY_INVAL_INODE, off -1) */
#define UFS_COH_SENT_DATA 2	/* cached pages too (off 0) */

struct ufs_fid_node {
	struct ufs_fid_node *next;	/* the bucket's chain */
	const struct file_handle *handle;	/* the inode's, NULL: not indexed */
};

/* In the store (inodes->fids). */
struct ufs_inode_fids {
	struct ufs_fid_node **buckets;
	size_t nbuckets, count;
};

uint32_t ufs_fid_hash(int type, const unsigned char *bytes, uint32_t len);
void ufs_fids_destroy(struct ufs_inode_fids *fids);
/* An inode with this handle joins (NULL: none, not indexed). */
void ufs_fids_add(struct ufs_inode_fids *fids, struct ufs_fid_node *node,
		  const struct file_handle *handle);
void ufs_fids_del(struct ufs_inode_fids *fids, struct ufs_fid_node *node);
/* Up to max nodes with this handle (a file can have two entries: inode_lookup.c). */
size_t ufs_fids_find(const struct ufs_inode_fids *fids, int type, const unsigned char *bytes,
		     uint32_t len, struct ufs_fid_node **out, size_t max);
/* Up to max nodes, whole buckets from *cursor on (0 at first); 0 at the end. */
size_t ufs_fids_walk(const struct ufs_inode_fids *fids, size_t *cursor, struct ufs_fid_node **out,
		     size_t max);

#endif /* UFS_INODE_FID_H */
