/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Node ids the kernel forgot, kept for its file handles (export.c).
 */
#ifndef UFS_EXPORT_H
#define UFS_EXPORT_H

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_record;

/*
 * The records, in the inode store (store->exports).  Every field, and
 * every function below, under the store's inode_lock.
 */
struct ufs_export;
struct ufs_exports {
	struct ufs_record *record;	/* where records are kept for a successor */
	pthread_mutex_t *lock;		/* the inode store's, which its callers hold */
	struct ufs_export **by_id, **by_key;
	size_t buckets, count;
	unsigned int limit;		/* export_inodes; 0 keeps none */
	struct ufs_export *oldest;	/* a list, oldest first ... */
	struct ufs_export **newest_link;	/* ... and where the next one is linked */
	uint64_t revived, stale, expired;	/* LOOKUP "." served, gone, dropped by limit */
};

/* What a dying inode leaves in its record: the part of the inode export.c sees. */
struct ufs_export_key {
	uint64_t nodeid;
	dev_t dev;
	ino_t ino;
	mode_t type;
	uint64_t parent;		/* where a name last led to it, 0: unknown */
	const struct file_handle *handle;	/* copied; NULL: none, keeps nothing */
	int mount_fd;			/* the handle's file system (not owned) */
	int mount_id;
	bool keyed;			/* still owns its (dev, ino): the file existed */
	uint32_t record_slot;		/* its hand-over record + 1, 0: none */
};

/* A record copied out to reopen its file without the lock. */
struct ufs_export_copy {
	struct file_handle *handle;	/* malloc'ed */
	dev_t dev;
	ino_t ino;
	mode_t type;
	int mount_fd;
	int mount_id;
	uint64_t parent;		/* a non-directory is looked for there */
};

/* lock: the inode store's, which every _locked call below needs held. */
int ufs_exports_init(struct ufs_exports *ex, unsigned int limit, pthread_mutex_t *lock);
void ufs_exports_destroy(struct ufs_exports *ex);
void ufs_export_keep_locked(struct ufs_exports *ex, const struct ufs_export_key *inode);
uint64_t ufs_export_reclaim_locked(struct ufs_exports *ex, dev_t dev, ino_t ino,
				   const struct file_handle *handle, uint32_t *record_slot);
bool ufs_export_has_locked(const struct ufs_exports *ex, uint64_t nodeid);
int ufs_export_copy_locked(const struct ufs_exports *ex, uint64_t nodeid,
			   struct ufs_export_copy *out);
bool ufs_export_drop_locked(struct ufs_exports *ex, uint64_t nodeid, bool stale,
			    uint32_t *record_slot);

#endif /* UFS_EXPORT_H */
