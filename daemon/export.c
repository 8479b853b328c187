// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Node ids the kernel has forgotten, kept for its file handles.
 *
 * A FUSE file handle is the node id and generation (fuse_encode_fh).  When
 * the kernel no longer has the inode cached, open_by_handle_at and an NFS
 * server exporting the mount send LOOKUP(nodeid, ".") (fuse_get_dentry)
 * for a node id the kernel sent FORGET for long ago.  So an inode that dies
 * here leaves a record: its node id, backing key and backing file handle.
 * LOOKUP "." revives it by that handle, and a lookup by name that finds
 * the same file again gives it back the same node id, so one file never
 * gets two.  Node ids are never reused, so the generation stays 0.
 *
 * Records are compact (one allocation, the handle inline) and bounded by
 * export_inodes: beyond it the oldest go, and their handles get ESTALE.
 * A record keeps the dead inode's hand-over record (record.h), marked
 * exported, so a successor can revive it too; the two go together.
 * Everything here runs under the inode store's inode_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "hash.h"
#include "lockdep.h"
#include "record.h"

#define EXPORT_MIN_BUCKETS 1024

struct ufs_export {
	uint64_t nodeid;
	dev_t dev;
	ino_t ino;
	mode_t type;
	uint64_t parent;			/* where a non-directory is found again */
	int mount_fd;				/* not owned: the store's mount descriptors */
	int mount_id;
	uint32_t record_slot;			/* its hand-over record (the inode's) */
	struct ufs_export *next_by_id, *next_by_key;
	struct ufs_export *newer;		/* oldest first, for the bound */
	struct ufs_export **prev_newer;		/* the pointer that points here */
	struct file_handle handle;		/* must be last: f_handle[] follows */
};

static size_t bucket_of_id(const struct ufs_exports *ex, uint64_t nodeid)
{
	return ufs_hash_nodeid(nodeid, ex->buckets);
}

static size_t bucket_of_key(const struct ufs_exports *ex, dev_t dev, ino_t ino)
{
	return ufs_hash_key(dev, ino, ex->buckets);
}

int ufs_exports_init(struct ufs_exports *ex, unsigned int limit, pthread_mutex_t *lock)
{
	memset(ex, 0, sizeof(*ex));
	ex->lock = lock;
	ex->limit = limit;
	ex->buckets = EXPORT_MIN_BUCKETS;
	ex->by_id = calloc(ex->buckets, sizeof(*ex->by_id));
	ex->by_key = calloc(ex->buckets, sizeof(*ex->by_key));
	ex->newest_link = &ex->oldest;
	if (!ex->by_id || !ex->by_key) {
		free(ex->by_id);
		free(ex->by_key);
		return -ENOMEM;
	}
	return 0;
}

void ufs_exports_destroy(struct ufs_exports *ex)
{
	struct ufs_export *e = ex->oldest;

	while (e) {
		struct ufs_export *next = e->newer;

		free(e);
		e = next;
	}
	free(ex->by_id);
	free(ex->by_key);
	memset(ex, 0, sizeof(*ex));
}

static void link_record(struct ufs_exports *ex, struct ufs_export *e)
{
	size_t i = bucket_of_id(ex, e->nodeid), k = bucket_of_key(ex, e->dev, e->ino);

	e->next_by_id = ex->by_id[i];
	ex->by_id[i] = e;
	e->next_by_key = ex->by_key[k];
	ex->by_key[k] = e;
}

/* Double the buckets at one record per bucket; a failed allocation keeps chains longer. */
static void grow(struct ufs_exports *ex)
{
	size_t n = ex->buckets * 2;
	struct ufs_export **by_id = calloc(n, sizeof(*by_id));
	struct ufs_export **by_key = calloc(n, sizeof(*by_key));

	if (!by_id || !by_key) {
		free(by_id);
		free(by_key);
		return;
	}
	free(ex->by_id);
	free(ex->by_key);
	ex->by_id = by_id;
	ex->by_key = by_key;
	ex->buckets = n;
	for (struct ufs_export *e = ex->oldest; e; e = e->newer)
		link_record(ex, e);
}

static void unlink_record(struct ufs_exports *ex, struct ufs_export *e)
{
	struct ufs_export **pp;

	for (pp = &ex->by_id[bucket_of_id(ex, e->nodeid)]; *pp != e; pp = &(*pp)->next_by_id)
		;
	*pp = e->next_by_id;
	for (pp = &ex->by_key[bucket_of_key(ex, e->dev, e->ino)]; *pp != e;
	     pp = &(*pp)->next_by_key)
		;
	*pp = e->next_by_key;
	*e->prev_newer = e->newer;
	if (e->newer)
		e->newer->prev_newer = e->prev_newer;
	else
		ex->newest_link = e->prev_newer;
	ex->count--;
}

/*
 * A dying inode leaves its record.  Only inodes that still own their key
 * (the file existed when last seen) and have a file handle qualify.
 */
void ufs_export_keep_locked(struct ufs_exports *ex, const struct ufs_export_key *inode)
{
	UFS_ASSERT_HELD(ex->lock);
	struct ufs_export *e = NULL;

	if (ex->limit && inode->handle && inode->keyed)
		e = malloc(sizeof(*e) + inode->handle->handle_bytes);
	if (!e) {
		/* The handle goes stale, as before export_inodes. */
		ufs_record_node_drop(ex->record, inode->record_slot);
		return;
	}
	e->record_slot = inode->record_slot;
	ufs_record_node_lookups(ex->record, e->record_slot, 0);
	ufs_record_node_exported(ex->record, e->record_slot, inode->parent);
	e->nodeid = inode->nodeid;
	e->parent = inode->parent;
	e->dev = inode->dev;
	e->ino = inode->ino;
	e->type = inode->type;
	e->mount_fd = inode->mount_fd;
	e->mount_id = inode->mount_id;
	memcpy(&e->handle, inode->handle, sizeof(*inode->handle) + inode->handle->handle_bytes);
	if (ex->count >= ex->buckets)
		grow(ex);
	link_record(ex, e);
	e->newer = NULL;
	e->prev_newer = ex->newest_link;
	*ex->newest_link = e;
	ex->newest_link = &e->newer;
	ex->count++;
	while (ex->count > ex->limit) {
		struct ufs_export *old = ex->oldest;

		unlink_record(ex, old);
		ufs_record_node_drop(ex->record, old->record_slot);
		free(old);
		ex->expired++;
	}
}

static struct ufs_export *find_id(const struct ufs_exports *ex, uint64_t nodeid)
{
	struct ufs_export *e = ex->by_id[bucket_of_id(ex, nodeid)];

	while (e && e->nodeid != nodeid)
		e = e->next_by_id;
	return e;
}

bool ufs_export_has_locked(const struct ufs_exports *ex, uint64_t nodeid)
{
	UFS_ASSERT_HELD(ex->lock);
	return ex->count && find_id(ex, nodeid);
}

/*
 * The node id a file had before the kernel forgot it, if handle (the file
 * as found now) is the same file; 0 if none.  The record goes either way:
 * the file is live again, or its key belongs to another file now.  With
 * the node id, the caller gets its hand-over record in *record_slot.
 */
uint64_t ufs_export_reclaim_locked(struct ufs_exports *ex, dev_t dev, ino_t ino,
				   const struct file_handle *handle, uint32_t *record_slot)
{
	UFS_ASSERT_HELD(ex->lock);
	struct ufs_export *e;
	uint64_t nodeid = 0;

	if (!ex->count)
		return 0;
	for (e = ex->by_key[bucket_of_key(ex, dev, ino)]; e; e = e->next_by_key) {
		if (e->dev == dev && e->ino == ino)
			break;
	}
	if (!e)
		return 0;
	if (handle && handle->handle_type == e->handle.handle_type &&
	    handle->handle_bytes == e->handle.handle_bytes &&
	    !memcmp(handle->f_handle, e->handle.f_handle, handle->handle_bytes))
		nodeid = e->nodeid;
	if (nodeid)
		*record_slot = e->record_slot;
	else
		ufs_record_node_drop(ex->record, e->record_slot);
	unlink_record(ex, e);
	free(e);
	return nodeid;
}

/*
 * A copy of nodeid's record for reopening outside the lock: the caller
 * frees it.  -ESTALE if there is none, -ENOMEM.
 */
int ufs_export_copy_locked(const struct ufs_exports *ex, uint64_t nodeid,
			   struct ufs_export_copy *out)
{
	UFS_ASSERT_HELD(ex->lock);
	const struct ufs_export *e = find_id(ex, nodeid);

	if (!e)
		return -ESTALE;
	out->handle = malloc(sizeof(e->handle) + e->handle.handle_bytes);
	if (!out->handle)
		return -ENOMEM;
	memcpy(out->handle, &e->handle, sizeof(e->handle) + e->handle.handle_bytes);
	out->dev = e->dev;
	out->ino = e->ino;
	out->type = e->type;
	out->mount_fd = e->mount_fd;
	out->mount_id = e->mount_id;
	out->parent = e->parent;
	return 0;
}

/*
 * nodeid's record is no longer needed (revived: the caller gets its
 * hand-over record in *record_slot) or no longer true (stale: the file is
 * gone), and counted so.  Returns whether it was still there.
 */
bool ufs_export_drop_locked(struct ufs_exports *ex, uint64_t nodeid, bool stale,
			    uint32_t *record_slot)
{
	UFS_ASSERT_HELD(ex->lock);
	struct ufs_export *e = find_id(ex, nodeid);

	if (!e)
		return false;
	if (stale)
		ufs_record_node_drop(ex->record, e->record_slot);
	else
		*record_slot = e->record_slot;
	unlink_record(ex, e);
	free(e);
	if (stale)
		ex->stale++;
	else
		ex->revived++;
	return true;
}
