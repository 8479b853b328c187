// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store's entries found by name (inode_lookup.c): a LOOKUP, a
 * create or a rename leads to a file, which gets its entry (a new one, the
 * one it has, or its old node id back from the export records), its
 * kernel lookup counted, and where a name last led to it.  Each is written
 * to the hand-over record and the export store before the reply that
 * gives its node id to the kernel.  And a name removed: the entry's
 * descriptor goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuse_abi.h"
#include "inode.h"
#include "inode_lookup.h"
#include "lockdep.h"
#include "record.h"
#include "store.h"

/*
 * ---- the hand-over record (record.h), under inode_lock ----
 *
 * A node id a successor must resolve is recorded before the reply that
 * gives it to the kernel, with its lookups; inodes without a file handle
 * (and the root and control file, which every daemon makes itself) are not.
 */

/* Its node id to the export store (store.h) as well, before the reply. */
static void store_note(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (inode->handle)
		ufs_store_note(inodes->store, inode->nodeid, inode->dev, inode->ino, inode->type,
			       inode->parent, inode->mount_id, inode->handle->handle_type,
			       inode->handle->f_handle, inode->handle->handle_bytes);
}

static void record_add(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (!inode->handle)
		return;
	store_note(inodes, inode);
	inode->record_slot = ufs_record_node_add(inodes->record, inode->nodeid, inode->nlookup,
						 inode->dev, inode->ino, inode->type,
						 inode->mount_id, inode->handle->handle_type,
						 inode->handle->f_handle,
						 inode->handle->handle_bytes);
}

/* Where a name last led to it, in the record too (inode_reopen). */
static void parent_set_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode,
			      uint64_t parent)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (!parent)
		return;
	ufs_record_node_parent(inodes->record, inode->record_slot, parent);
	if (inode->parent == parent)
		return;
	inode->parent = parent;
	store_note(inodes, inode);
}

/* A node id from the export records is live again: its record with it. */
void ufs_inode_record_revived_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode,
				     uint32_t slot)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	/* From the export store (no hand-over record yet): a new one, and the store's again. */
	if (!slot) {
		record_add(inodes, inode);
		return;
	}
	store_note(inodes, inode);
	inode->record_slot = slot;
	ufs_record_node_set_flags(inodes->record, slot, 0);
	ufs_inode_record_lookups_locked(inodes, inode);
}

static uint64_t nodeid_new_locked(struct ufs_inode_store *inodes)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	uint64_t nodeid = inodes->next_nodeid++;

	ufs_record_next_nodeid(inodes->record, inodes->next_nodeid);
	return nodeid;
}

static bool handles_equal(const struct file_handle *a, const struct file_handle *b)
{
	return a && b && a->handle_type == b->handle_type && a->handle_bytes == b->handle_bytes &&
	       !memcmp(a->f_handle, b->f_handle, a->handle_bytes);
}

/* Inode entry found for a key: is it the file fd refers to?  Called with inode_lock. */
static bool entry_is_file(const struct ufs_inode *inode, const struct ufs_inode *fresh)
{
	/* An entry holding a descriptor keeps its inode alive: the number is not reused. */
	if (inode->fd >= 0 || inode->control)
		return true;
	/* Closed: the number may belong to a new file now; the handle's generation tells. */
	return handles_equal(inode->handle, fresh->handle);
}

/* The kernel was given inode once more (a LOOKUP's reply): counted. */
static void lookup_counted_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	inode->nlookup++;
	inode->coh_sent = 0;	/* given to the kernel again (inode.h) */
	inode->used = true;	/* inode_prune.c's CLOCK */
	ufs_inode_record_lookups_locked(inodes, inode);
}

/*
 * Account one kernel lookup for the object fd refers to.  Takes ownership
 * of fd: it becomes the inode's descriptor, or is closed if the inode is
 * already known.  Returns 0 and the inode with nlookup incremented in *out,
 * or a negative errno.
 *
 * (st_dev, st_ino) names a file only while it exists: once its last
 * descriptor and link are gone the number can come back for another file.
 * An entry that no longer holds a descriptor is checked by file handle;
 * a stale one leaves the key index and waits for its FORGET.
 */
int ufs_inode_find_or_insert(struct ufs_inode_store *inodes, int fd, const struct stat *st,
			     uint64_t parent, struct ufs_inode **out)
{
	int evict[2] = { -1, -1 };
	struct ufs_inode *inode, *fresh;
	uint32_t slot = 0;
	int ret;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_key_locked(inodes, st->st_dev, st->st_ino);
	if (inode && (inode->fd >= 0 || inode->control)) {
		parent_set_locked(inodes, inode, parent);
		lookup_counted_locked(inodes, inode);
		pthread_mutex_unlock(&inodes->inode_lock);
		if (fd >= 0)
			close(fd);
		*out = inode;
		return 0;
	}
	pthread_mutex_unlock(&inodes->inode_lock);

	fresh = ufs_inode_new(st->st_dev, st->st_ino, st->st_mode, fd);
	if (!fresh) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	ret = fd >= 0 ? ufs_inode_handle_make(&inodes->handles, fresh->fd, fresh->type,
					      &fresh->handle, &fresh->mount_fd, &fresh->mount_id)
		      : 0;
	if (ret) {
		ufs_inode_free(inodes, fresh);
		return ret;
	}

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_key_locked(inodes, st->st_dev, st->st_ino);
	if (inode && entry_is_file(inode, fresh)) {
		parent_set_locked(inodes, inode, parent);
		lookup_counted_locked(inodes, inode);
		if (inode->fd < 0 && inode->handle && fresh->fd >= 0) {
			/* An evicted descriptor comes back for free, found inside. */
			inode->fd = fresh->fd;
			inode->unverified = false;
			fresh->fd = -1;
			inodes->fds_open++;
			ufs_inode_lru_offer_locked(inodes, inode, evict, 2);
		}
		pthread_mutex_unlock(&inodes->inode_lock);
		ufs_inode_close_evicted(evict, 2);
		ufs_inode_free(inodes, fresh);
		*out = inode;
		return 0;
	}
	if (inode)
		ufs_inode_unkey_locked(inodes, inode);
	/* A file the kernel forgot comes back under its old node id, for its handles. */
	fresh->nodeid = ufs_export_reclaim_locked(&inodes->exports, fresh->dev, fresh->ino,
						  fresh->handle, &slot);
	fresh->nlookup = 1;
	fresh->parent = parent;
	if (fresh->nodeid) {
		ufs_inode_record_revived_locked(inodes, fresh, slot);
	} else {
		fresh->nodeid = nodeid_new_locked(inodes);
		record_add(inodes, fresh);
		parent_set_locked(inodes, fresh, parent);
	}
	ufs_inode_insert_locked(inodes, fresh);
	if (fresh->handle) {
		inodes->fds_open++;
		ufs_inode_lru_offer_locked(inodes, fresh, evict, 2);
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	ufs_inode_close_evicted(evict, 2);
	*out = fresh;
	return 0;
}

/* One more kernel lookup of an inode a request holds (LOOKUP "."). */
void ufs_inode_add_lookup(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	pthread_mutex_lock(&inodes->inode_lock);
	lookup_counted_locked(inodes, inode);
	pthread_mutex_unlock(&inodes->inode_lock);
}

/* A name of (dev, ino) now lives in parent (RENAME): where to find it again. */
void ufs_inode_moved(struct ufs_inode_store *inodes, dev_t dev, ino_t ino, uint64_t parent)
{
	struct ufs_inode *inode;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_key_locked(inodes, dev, ino);
	if (inode)
		parent_set_locked(inodes, inode, parent);
	pthread_mutex_unlock(&inodes->inode_lock);
}

/*
 * A name of the file was removed through the mount.  Our descriptor goes
 * as soon as no request or open file pins the inode: with the last name
 * gone (nlink 0) it alone would keep the file's space in use until
 * FORGET, and NFS, which renames a file still in use to .nfsXXXX instead
 * of removing it (our descriptor is a use), would keep that file.  An
 * inode with a file handle reopens by it if the kernel asks again.
 */
struct ufs_inode *ufs_inode_unlinked(struct ufs_inode_store *inodes, dev_t dev, ino_t ino,
				     nlink_t nlink)
{
	struct ufs_inode *inode, *pinned = NULL;
	int fd = -1;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_key_locked(inodes, dev, ino);
	if (inode && inode != inodes->root && inode->fd >= 0 && (!nlink || inode->handle)) {
		if (inode->refs) {
			inode->drop_fd = true;	/* at its last ufs_inode_put */
			if (!nlink) {
				inode->refs++;	/* pinned already: off the LRU */
				pinned = inode;
			}
		} else {
			fd = ufs_inode_fd_take_locked(inodes, inode);
		}
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	if (fd >= 0)
		close(fd);
	return pinned;
}

/* A name of (dev, ino) now lives in parent (RENAME): where to find it again. */
