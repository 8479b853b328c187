/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The inode store: every inode the kernel knows, found by node id and by
 * backing (st_dev, st_ino), its descriptor, file handle and lookups
 * (inode.c); entries found by name (inode_lookup.c); file handles and
 * mount descriptors (inode_handle.c); revive and restore (inode_revive.c).
 */
#ifndef UFS_INODE_H
#define UFS_INODE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "export.h"
#include "ident.h"
#include "inode_fid.h"
#include "inode_handle.h"
#include "io_mode.h"

struct ufs_config;
struct ufs_confine;
struct ufs_file;
struct ufs_lock_owner;
struct ufs_record;
struct ufs_store;

struct ufs_inode {
	uint64_t nodeid;		/* our id, never reused */
	dev_t dev;			/* backing identity */
	ino_t ino;
	mode_t type;			/* S_IFMT bits */
	struct file_handle *handle;	/* reopens fd (inode_handles), or NULL */
	int mount_fd;			/* the handle's file system, for open_by_handle_at */
	int mount_id;			/* name_to_handle_at's, for the hand-over record */
	/*
	 * A directory's last "inside SOURCE", or that it is on another mount
	 * (ufs_check_beneath_dir): no lock, read and written atomically by
	 * whoever checks it.
	 */
	uint64_t beneath_seen;
	/* fields below are protected by the store's inode_lock */
	int fd;				/* O_PATH; -1 while evicted (handle only) */
	uint64_t nlookup;		/* references the kernel holds */
	uint64_t parent;		/* where a name last led to it, 0: unknown (export.c) */
	uint32_t refs;			/* in-flight requests and open files; pins fd */
	struct ufs_inode *next_by_id;	/* hash chains */
	struct ufs_inode *next_by_key;
	bool keyed;			/* in the (dev, ino) index: the file still has this key */
	bool drop_fd;			/* a name was removed: close fd once unpinned */
	bool unverified;		/* restored from a record: not yet proven inside SOURCE */
	uint32_t record_slot;		/* its hand-over record + 1, 0: none (record.h) */
	struct ufs_fid_node fid;	/* the index by file handle (inode_fid.c) */
	/*
	 * UFS_COH_SENT_*: what the coherence watcher's last invalidation
	 * dropped, cleared when a request pins it or a reply gives it to the
	 * kernel again: until then another change needs no invalidation.
	 */
	uint8_t coh_sent;
	struct ufs_inode *lru_prev;	/* unpinned handle inodes with an fd, oldest first */
	struct ufs_inode *lru_next;
	/* fields below are protected by lock */
	pthread_mutex_t lock;
	struct ufs_lock_owner *lock_owners;
	enum ufs_io_mode io_mode;	/* the data path of its opens (passthrough.c) */
	uint32_t io_opens;		/* opens counted in io_mode */
	/*
	 * Writable passthrough opens: while there are any, a mapping writes
	 * the backing file behind the kernel's cached attributes, so they
	 * are replied uncacheable (read atomically by the attribute replies).
	 */
	uint32_t pt_writers;
	int backing_id;			/* UFS_IO_PASSTHROUGH: the kernel's id */
	/* the identity the kernel's passthrough writes have (registered as) */
	struct ufs_ident backing_who;
	bool backing_who_known;		/* false: restored from a hand-over */
	enum ufs_backing_fs backing_fs;	/* set once, atomically, at the first open */
	struct ufs_file *opens;		/* open files pinning fd (ufs_file_pin) */
	struct ufs_file *pin_payer;	/* the one of them charged for fd, or NULL */
	char control;			/* 1: the stats control file (no backing) */
	/*
	 * inode_prune.c's CLOCK, under the store's inode_lock: used is set
	 * where the store holds that lock anyway (a pin, a lookup, a new
	 * entry) and cleared by the pruner's hand; prune_asked: its node id
	 * went to the kernel in a PRUNE since it was last used.
	 */
	bool used;
	bool prune_asked;
};

/*
 * The inode store, in the file system (fs->inodes).  Take inode_lock
 * before any inode->lock; the mount descriptors' lock (handles.lock) is
 * never taken under it.
 */
struct ufs_inode_store {
	/* set by ufs_inode_store_init, before the first request; no lock */
	const struct ufs_config *cfg;	/* fd_cache, inode_handles, export_inodes */
	const struct ufs_confine *confine;	/* SOURCE's boundary (confine.h) */
	/* What the file system hung on an inode, freed with it (lock owners). */
	void (*inode_release)(struct ufs_inode *inode);
	struct ufs_inode *root;		/* FUSE_ROOT_ID, never forgotten */
	/*
	 * Set by ufs_inode_restore (inode_revive.c), before the first
	 * request: proves a restored inode inside SOURCE at its first
	 * reopen (fd: the reopened descriptor).  0 or -ESTALE.
	 */
	int (*verify)(struct ufs_inode_store *inodes, struct ufs_inode *inode, int fd);
	/* file handles usable, and the mount descriptors (their own lock) */
	struct ufs_handles handles;

	pthread_mutex_t inode_lock;	/* everything below */
	struct ufs_inode **by_id, **by_key;
	struct ufs_inode_fids fids;	/* by file handle, for the coherence watcher */
	size_t buckets, inode_count;
	uint64_t next_nodeid;
	/*
	 * Inode descriptors (inode_handles): an inode that has a file handle
	 * keeps its O_PATH descriptor only while in use or in a bounded LRU.
	 */
	size_t fds_open;		/* handle inodes with an open fd */
	struct ufs_inode *lru_head, *lru_tail;
	struct ufs_exports exports;	/* node ids the kernel forgot (export.h) */
	struct ufs_store *store;	/* the export store (store.h), NULL: none */
	struct ufs_record *record;	/* node records (record.h), or one that keeps nothing */
	uint64_t prune_forgets;		/* inodes forgotten after a PRUNE asked (inode_prune.c) */
};

/* inode.c: the tables, pins and the LRU */
int ufs_inode_store_init(struct ufs_inode_store *inodes, const struct ufs_config *cfg,
			 const struct ufs_confine *confine,
			 void (*inode_release)(struct ufs_inode *inode));
void ufs_inode_store_destroy(struct ufs_inode_store *inodes);
void ufs_inode_set_record(struct ufs_inode_store *inodes, struct ufs_record *record);
int ufs_inode_root_create(struct ufs_inode_store *inodes, int fd, const struct stat *st);
struct ufs_inode *ufs_inode_get(struct ufs_inode_store *inodes, uint64_t nodeid);
void ufs_inode_put(struct ufs_inode_store *inodes, struct ufs_inode *inode);
/* Another reference for something that outlives the request (an open file). */
void ufs_inode_ref(struct ufs_inode_store *inodes, struct ufs_inode *inode);
/* Whether anything but the caller's own ref pins inode (an open file, a request). */
bool ufs_inode_pinned_by_others(struct ufs_inode_store *inodes, struct ufs_inode *inode);
void ufs_inode_forget(struct ufs_inode_store *inodes, uint64_t nodeid, uint64_t nlookup);
size_t ufs_inode_count(struct ufs_inode_store *inodes);
void ufs_inode_for_each(struct ufs_inode_store *inodes,
			void (*fn)(void *arg, struct ufs_inode *inode), void *arg);
uint64_t ufs_inode_prune_forgets(struct ufs_inode_store *inodes);
void ufs_inode_export_stats(struct ufs_inode_store *inodes, struct ufs_exports *out);
/* 0 if the inode is inside SOURCE, else -ENOENT (confine.c) */
int ufs_inode_check_beneath(struct ufs_inode_store *inodes, struct ufs_inode *inode);
int ufs_inode_dir_beneath(struct ufs_inode_store *inodes, struct ufs_inode *inode);

/* inode.c, for inode_revive.c: the store's own parts */
struct ufs_inode *ufs_inode_new(dev_t dev, ino_t ino, mode_t type, int fd);
void ufs_inode_free(struct ufs_inode_store *inodes, struct ufs_inode *inode);
struct ufs_inode *ufs_inode_get_by_key(struct ufs_inode_store *inodes, dev_t dev, ino_t ino);
struct ufs_inode *ufs_inode_find_by_id_locked(struct ufs_inode_store *inodes, uint64_t nodeid);
struct ufs_inode *ufs_inode_find_by_key_locked(struct ufs_inode_store *inodes, dev_t dev,
					       ino_t ino);
void ufs_inode_insert_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode);
void ufs_inode_unkey_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode);
void ufs_inode_lru_offer_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode, int *evict,
				int nevict);
void ufs_inode_close_evicted(int *evict, int n);
int ufs_inode_fd_take_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode);
void ufs_inode_record_lookups_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode);
void ufs_inode_export_key(const struct ufs_inode *inode, struct ufs_export_key *key);

#endif /* UFS_INODE_H */
