/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The path the daemon knows for a node id, for the log (slow.c): where its
 * descriptor is, as the kernel's /proc/self/fd link says.
 */
#ifndef UFS_INODE_PATH_H
#define UFS_INODE_PATH_H

#include <stddef.h>
#include <stdint.h>

struct ufs_inode_store;

/*
 * The backing path of nodeid's descriptor into buf, without reopening
 * anything nor touching the backing file system (the kernel's d_path of
 * the descriptor: no I/O); 0, or -ENOENT when unknown (no such node id,
 * or its descriptor evicted: inode_handles), -ENAMETOOLONG.
 */
int ufs_inode_path(struct ufs_inode_store *inodes, uint64_t nodeid, char *buf, size_t size);

#endif /* UFS_INODE_PATH_H */
