/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The export store's state (store.h has what it is and its calls): types
 * only, shared by store.c (the file and its records) and store_lock.c (the
 * lock beside it), so that neither includes the other's header.
 */
#ifndef UFS_STORE_STATE_H
#define UFS_STORE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"

#define UFS_STORE_GEN_SHIFT 40		/* a daemon hands out < 2^40 node ids */
#define UFS_STORE_GEN_MASK 0x7fffffu	/* 23 bits: node ids stay below 2^63 */

struct ufs_store {
	int dir_fd, fd;			/* -1: no store */
	int lock_fd;			/* flock()ed "NAME.lock" in DIR, while the store is ours */
	char name[64];			/* the file's name in DIR */
	uint64_t ident;			/* SOURCE's identity, seeds every checksum */
	dev_t root_dev;			/* records on SOURCE's own file system ... */
	int root_mount_id;		/* ... and mount only */
	uint32_t capacity;		/* export_inodes */
	uint64_t generation;		/* this daemon's */
	uint64_t seq;			/* the next record's sequence number */
	bool failed;			/* a write failed: logged once, no more writes */
	/* what open loaded, oldest first; freed by ufs_store_loaded_free */
	struct ufs_record_node *loaded;
	size_t nloaded, nrefused;
};

#endif /* UFS_STORE_STATE_H */
