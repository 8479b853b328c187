/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hash buckets of the inode store (inode.c) and of the export records
 * (export.c): by node id and by backing (st_dev, st_ino).  buckets is a
 * power of two.  Types and inline helpers only.
 */
#ifndef UFS_HASH_H
#define UFS_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

static inline size_t ufs_hash_nodeid(uint64_t nodeid, size_t buckets)
{
	return (nodeid * 0x9e3779b97f4a7c15ULL) >> 17 & (buckets - 1);
}

static inline size_t ufs_hash_key(dev_t dev, ino_t ino, size_t buckets)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (h ^ h >> 29) & (buckets - 1);
}

#endif /* UFS_HASH_H */
