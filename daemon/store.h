/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The export store (export_store = DIR): what resolves a node id to its
 * backing file, kept on disk so that file handles outlive the daemon.
 *
 * One file per SOURCE in DIR: a header (magic, version, SOURCE's identity,
 * the last daemon generation, a checksum), then a ring of fixed-size
 * records, each with its own checksum, at most export_inodes of them.  A
 * node id is (generation << UFS_STORE_GEN_SHIFT) | counter, and every
 * daemon takes a new generation (synced to disk before it serves), so a
 * handle from an earlier daemon never names another file by accident.
 *
 * Nothing read from the store is trusted: the records become export
 * records (export.c), and a file is served from one only once
 * open_by_handle_at, its dev/ino/type and the "inside SOURCE" check agree
 * (ufs_inode_revive), exactly as for a record kept in memory.
 */
#ifndef UFS_STORE_H
#define UFS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "store_state.h"

/*
 * Open (or create) SOURCE's store in dir for the file system whose root is
 * root_fd, keeping at most capacity records.  A store
 * that fails any check is refused (one log line), replaced by a new one.
 * Returns 0, or -errno with why set when dir itself is unsafe or unusable;
 * -EBUSY when another daemon holds the store's lock (it is in use).
 */
int ufs_store_open(struct ufs_store *s, const char *dir, int root_fd, uint32_t capacity,
		   char *why, size_t why_len);
/* The generation of a daemon without a store: random, never 0. */
uint64_t ufs_store_random_generation(void);
void ufs_store_loaded_free(struct ufs_store *s);
/* Sync and close; takes NULL or a store never opened. */
void ufs_store_close(struct ufs_store *s);
void ufs_store_init(struct ufs_store *s);
/*
 * A node id is about to be handed to the kernel (or its parent changed):
 * its record goes to the store before the reply.  Under the inode store's
 * lock; a NULL store or one on another mount does nothing.
 */
void ufs_store_note(struct ufs_store *s, uint64_t nodeid, dev_t dev, ino_t ino, mode_t type,
		    uint64_t parent, int mount_id, int handle_type, const void *handle,
		    unsigned int handle_bytes);

#endif /* UFS_STORE_H */
