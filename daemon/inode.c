// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store.
 *
 * Every inode the kernel knows has one entry, found by our nodeid (the
 * kernel's name for it) and by the backing (st_dev, st_ino), so hard links
 * share an entry.  An entry lives while the kernel holds lookups on it
 * (nlookup, dropped by FORGET) or a request in flight uses it (refs).
 * Nodeids are never reused, so the generation is always 0: a node id
 * carries its daemon's generation in its high bits instead (store.h).
 *
 * The kernel may keep a million inodes looked up, far more than the hard
 * RLIMIT_NOFILE allows descriptors.  So with inode_handles an entry keeps a
 * file handle (name_to_handle_at) and holds its O_PATH descriptor only while
 * pinned (refs > 0: a request or an open file uses it) or among the
 * fd_cache most recently unpinned; evicted ones are reopened by handle on
 * their next use.  File systems without handles keep a descriptor per inode.
 * An entry that dies leaves its handle in export.c, so the kernel can find
 * the node id again from a file handle (LOOKUP "."): ufs_inode_revive.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "lockdep.h"
#include "log.h"
#include "store.h"

#define INODE_MIN_BUCKETS 1024

int ufs_inode_table_init(struct ufs_fs *fs)
{
	fs->buckets = INODE_MIN_BUCKETS;
	fs->by_id = calloc(fs->buckets, sizeof(*fs->by_id));
	fs->by_key = calloc(fs->buckets, sizeof(*fs->by_key));
	if (!fs->by_id || !fs->by_key ||
	    ufs_exports_init(&fs->exports, fs->cfg->export_support ? fs->cfg->export_inodes : 0)) {
		free(fs->by_id);
		free(fs->by_key);
		return -ENOMEM;
	}
	fs->next_nodeid = FUSE_ROOT_ID + 1;
	return pthread_mutex_init(&fs->inode_lock, NULL) ? -ENOMEM : 0;
}

static void inode_free(struct ufs_fs *fs, struct ufs_inode *inode)
{
	/* What the file system hung on the inode (lock owners) goes first. */
	if (fs->inode_release)
		fs->inode_release(inode);
	if (inode->fd >= 0)
		close(inode->fd);
	free(inode->handle);
	pthread_mutex_destroy(&inode->lock);
	free(inode);
}

/*
 * ---- pins and the LRU of unpinned descriptors; all called with inode_lock ----
 *
 * refs counts pins: requests in flight and open files.  A pinned inode keeps
 * its descriptor.  An unpinned handle inode that still has one waits on the
 * LRU, oldest first, until fd_cache newer ones push it out.  refs changes
 * only in pin_locked() and unpin_locked(), and they move the inode off and
 * onto the list, so "an inode with references is never on the LRU" holds by
 * construction: the eviction below can never close a descriptor in use, and
 * no inode is linked twice.
 */

static bool lru_linked(const struct ufs_fs *fs, const struct ufs_inode *inode)
{
	return inode->lru_prev || fs->lru_head == inode;
}

static void lru_remove(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (!lru_linked(fs, inode))
		return;
	if (inode->lru_prev)
		inode->lru_prev->lru_next = inode->lru_next;
	else
		fs->lru_head = inode->lru_next;
	if (inode->lru_next)
		inode->lru_next->lru_prev = inode->lru_prev;
	else
		fs->lru_tail = inode->lru_prev;
	inode->lru_prev = inode->lru_next = NULL;
}

static void lru_add(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	UFS_BUG_ON(lru_linked(fs, inode) || inode->refs || !inode->handle || inode->fd < 0);
	inode->lru_prev = fs->lru_tail;
	inode->lru_next = NULL;
	if (fs->lru_tail)
		fs->lru_tail->lru_next = inode;
	else
		fs->lru_head = inode;
	fs->lru_tail = inode;
}

/*
 * Close the oldest unpinned descriptors until at most fd_cache handle
 * inodes hold one.  Returns a descriptor to close after unlocking, or -1;
 * called repeatedly.
 */
static int lru_evict_one(struct ufs_fs *fs)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	struct ufs_inode *victim = fs->lru_head;
	int fd;

	if (!victim || fs->fds_open <= fs->cfg->fd_cache)
		return -1;
	UFS_BUG_ON(victim->refs || victim->fd < 0);
	lru_remove(fs, victim);
	fd = victim->fd;
	victim->fd = -1;
	fs->fds_open--;
	return fd;
}

/*
 * An unpinned inode that holds a descriptor it could give up joins the LRU,
 * and the cache sheds its oldest beyond fd_cache into evict[] (closed by the
 * caller after unlocking).
 */
static void lru_offer(struct ufs_fs *fs, struct ufs_inode *inode, int *evict, int nevict)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	int i = 0;

	if (inode->refs || !inode->handle || inode->fd < 0)
		return;
	lru_add(fs, inode);
	while (i < nevict && (evict[i] = lru_evict_one(fs)) >= 0)
		i++;
}

static void pin_locked(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (inode->refs++ == 0)
		lru_remove(fs, inode);
	UFS_BUG_ON(!inode->refs || lru_linked(fs, inode));
}

/* Returns whether that was the last pin. */
static bool unpin_locked(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	UFS_BUG_ON(!inode->refs);
	return --inode->refs == 0;
}

/* Take the descriptor of an unpinned inode away from it; the caller closes it. */
static int fd_take_locked(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	int fd = inode->fd;

	lru_remove(fs, inode);
	if (inode->handle && fd >= 0)
		fs->fds_open--;
	inode->fd = -1;
	inode->drop_fd = false;
	return fd;
}

static void close_evicted(int *evict, int n)
{
	for (int i = 0; i < n && evict[i] >= 0; i++)
		close(evict[i]);
}

/* A new entry for (st_dev, st_ino), owning fd (or -1); not in the tables yet. */
static struct ufs_inode *inode_new(dev_t dev, ino_t ino, mode_t type, int fd)
{
	struct ufs_inode *inode = calloc(1, sizeof(*inode));

	if (!inode || pthread_mutex_init(&inode->lock, NULL)) {
		free(inode);
		return NULL;
	}
	inode->dev = dev;
	inode->ino = ino;
	inode->type = type & S_IFMT;
	inode->fd = fd;
	inode->mount_fd = -1;
	return inode;
}

/* ---- file handles ---- */

/* A descriptor open_by_handle_at accepts for the handle's mount (not O_PATH). */
static int mount_fd_for(struct ufs_fs *fs, int mount_id, int fd, mode_t type)
{
	char name[32];
	int mfd;

	for (unsigned int i = 0; i < fs->nmount_fds; i++) {
		if (fs->mount_fds[i].mount_id == mount_id)
			return fs->mount_fds[i].fd;
	}
	/* The first object met on a new mount is its root directory, in practice. */
	if (type != S_IFDIR || fs->nmount_fds == sizeof(fs->mount_fds) / sizeof(fs->mount_fds[0]))
		return -1;
	snprintf(name, sizeof(name), "%d", fd);
	mfd = openat(fs->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return -1;
	fs->mount_fds[fs->nmount_fds].mount_id = mount_id;
	fs->mount_fds[fs->nmount_fds].fd = mfd;
	fs->nmount_fds++;
	return mfd;
}

/* Give a fresh inode a handle; without one it keeps its descriptor for good. */
static int inode_handle_make(struct ufs_fs *fs, struct ufs_inode *inode)
{
	struct file_handle *fh;
	int mount_id, mfd;

	if (!fs->handles)
		return 0;
	fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	if (!fh)
		return -ENOMEM;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(inode->fd, "", fh, &mount_id, AT_EMPTY_PATH)) {
		int e = errno;

		free(fh);
		/* EOPNOTSUPP/EOVERFLOW: this file system cannot, and never will. */
		return fs->cfg->inode_handles == UFS_HANDLES_MANDATORY ? -e : 0;
	}
	pthread_mutex_lock(&fs->inode_lock);
	mfd = mount_fd_for(fs, mount_id, inode->fd, inode->type);
	pthread_mutex_unlock(&fs->inode_lock);
	if (mfd < 0) {
		free(fh);
		return fs->cfg->inode_handles == UFS_HANDLES_MANDATORY ? -EOPNOTSUPP : 0;
	}
	inode->handle = realloc(fh, sizeof(*fh) + fh->handle_bytes) ?: fh;
	inode->mount_fd = mfd;
	inode->mount_id = mount_id;
	return 0;
}

/*
 * Can this process use handles on SOURCE?  open_by_handle_at needs
 * CAP_DAC_READ_SEARCH, and the file system must export handles.
 */
int ufs_inode_handles_init(struct ufs_fs *fs)
{
	struct ufs_inode probe = { .fd = fs->root_fd, .type = S_IFDIR };
	int fd, ret;

	if (fs->cfg->inode_handles == UFS_HANDLES_NEVER)
		return 0;
	fs->handles = true;
	ret = inode_handle_make(fs, &probe);
	if (!ret && probe.handle) {
		fd = open_by_handle_at(probe.mount_fd, probe.handle, O_PATH | O_CLOEXEC);
		ret = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	} else if (!ret) {
		ret = -EOPNOTSUPP;
	}
	free(probe.handle);
	if (!ret)
		return 0;
	fs->handles = false;
	if (fs->cfg->inode_handles == UFS_HANDLES_MANDATORY) {
		ufs_err("inode_handles=mandatory, but file handles do not work here: %s%s",
			strerror(-ret), ret == -EPERM ? " (needs CAP_DAC_READ_SEARCH)" : "");
		return ret;
	}
	ufs_warn("inode_handles: file handles unusable (%s): one descriptor per inode, "
		 "at most RLIMIT_NOFILE inodes", strerror(-ret));
	return 0;
}

static int found_in_parent(struct ufs_fs *fs, uint64_t parent, dev_t dev, ino_t ino);

/*
 * A restored inode is proven inside SOURCE once, at its first reopen, as
 * LOOKUP proves what it finds: a record is data, and a file moved out of
 * SOURCE while no daemon ran must not be served.  A directory by the path
 * of its descriptor (its handle always opens a connected dentry); anything
 * else in the directory where a name last led to it (the record keeps it),
 * as a revived file is (found_in_parent): its handle opens a disconnected
 * dentry once the kernel has dropped the cached one, and then its path
 * proves nothing.  This costs a scan of that directory, once per restored
 * file.  Not found there (moved within SOURCE, or no parent recorded), the
 * path of its descriptor decides, and a disconnected one is refused
 * (ESTALE), the cautious answer.
 */
static int reopen_verify(struct ufs_fs *fs, struct ufs_inode *inode, int fd)
{
	uint64_t parent;

	if (!__atomic_load_n(&inode->unverified, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&fs->inode_lock);
	parent = inode->parent;
	pthread_mutex_unlock(&fs->inode_lock);
	if (inode->type != S_IFDIR && parent &&
	    !found_in_parent(fs, parent, inode->dev, inode->ino))
		return 0;
	/* Or a connected dentry inside: moved within SOURCE, or its directory unknown. */
	return ufs_check_beneath_fd(fs, fd) ? -ESTALE : 0;
}

/*
 * The descriptor of a pinned inode whose fd was evicted, or of one a
 * predecessor's record restored (checked by reopen_verify).  An evicted
 * inode of this daemon was found inside by a LOOKUP and keeps working
 * wherever it is moved since, as an open file would: whether its
 * descriptor was evicted must not change what it serves.
 */
static int inode_reopen(struct ufs_fs *fs, struct ufs_inode *inode)
{
	int fd = open_by_handle_at(inode->mount_fd, inode->handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int evict[4] = { -1, -1, -1, -1 };
	struct stat st;

	if (fd < 0)
		return -errno;
	/* The file its handle and key name (a predecessor's record says both). */
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) || st.st_dev != inode->dev ||
	    st.st_ino != inode->ino || (st.st_mode & S_IFMT) != inode->type ||
	    reopen_verify(fs, inode, fd)) {
		close(fd);
		return -ESTALE;
	}
	pthread_mutex_lock(&fs->inode_lock);
	__atomic_store_n(&inode->unverified, false, __ATOMIC_RELAXED);
	if (inode->fd < 0) {
		inode->fd = fd;
		fs->fds_open++;
		fd = -1;
		/* Over the cache while pinned: evict someone unpinned instead. */
		for (int i = 0; i < 4 && (evict[i] = lru_evict_one(fs)) >= 0; i++)
			;
	}
	pthread_mutex_unlock(&fs->inode_lock);
	if (fd >= 0)
		close(fd);	/* another thread reopened it first */
	close_evicted(evict, 4);
	return 0;
}

void ufs_inode_table_destroy(struct ufs_fs *fs)
{
	for (size_t i = 0; i < fs->buckets; i++) {
		struct ufs_inode *inode = fs->by_id[i];

		while (inode) {
			struct ufs_inode *next = inode->next_by_id;

			inode_free(fs, inode);
			inode = next;
		}
	}
	free(fs->by_id);
	free(fs->by_key);
	fs->by_id = fs->by_key = NULL;
	ufs_exports_destroy(&fs->exports);
	for (unsigned int i = 0; i < fs->nmount_fds; i++)
		close(fs->mount_fds[i].fd);
	fs->nmount_fds = 0;
	pthread_mutex_destroy(&fs->inode_lock);
}

/*
 * ---- the hand-over record (record.h), under inode_lock ----
 *
 * A node id a successor must resolve is recorded before the reply that
 * gives it to the kernel, with its lookups; inodes without a file handle
 * (and the root and control file, which every daemon makes itself) are not.
 */
static void record_lookups(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	ufs_record_node_lookups(fs->record, inode->record_slot, inode->nlookup);
}

/* Its node id to the export store (store.h) as well, before the reply. */
static void store_note(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (inode->handle)
		ufs_store_note(fs->store, inode->nodeid, inode->dev, inode->ino, inode->type,
			       inode->parent, inode->mount_id, inode->handle->handle_type,
			       inode->handle->f_handle, inode->handle->handle_bytes);
}

static void record_add(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (!inode->handle)
		return;
	store_note(fs, inode);
	inode->record_slot = ufs_record_node_add(fs->record, inode->nodeid, inode->nlookup,
						 inode->dev, inode->ino, inode->type,
						 inode->mount_id, inode->handle->handle_type,
						 inode->handle->f_handle,
						 inode->handle->handle_bytes);
}

/* Where a name last led to it, in the record too (inode_reopen). */
static void parent_set_locked(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t parent)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (!parent)
		return;
	ufs_record_node_parent(fs->record, inode->record_slot, parent);
	if (inode->parent == parent)
		return;
	inode->parent = parent;
	store_note(fs, inode);
}

/* A node id from the export records is live again: its record with it. */
static void record_revived(struct ufs_fs *fs, struct ufs_inode *inode, uint32_t slot)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	/* From the export store (no hand-over record yet): a new one, and the store's again. */
	if (!slot) {
		record_add(fs, inode);
		return;
	}
	store_note(fs, inode);
	inode->record_slot = slot;
	ufs_record_node_set_flags(fs->record, slot, 0);
	record_lookups(fs, inode);
}

static uint64_t nodeid_new_locked(struct ufs_fs *fs)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	uint64_t nodeid = fs->next_nodeid++;

	ufs_record_next_nodeid(fs->record, fs->next_nodeid);
	return nodeid;
}

static void table_link(struct ufs_fs *fs, struct ufs_inode *inode)
{
	size_t i = ufs_hash_nodeid(inode->nodeid, fs->buckets);
	size_t k = ufs_hash_key(inode->dev, inode->ino, fs->buckets);

	inode->next_by_id = fs->by_id[i];
	fs->by_id[i] = inode;
	inode->next_by_key = fs->by_key[k];
	fs->by_key[k] = inode;
	inode->keyed = true;
}

static void key_unlink(struct ufs_fs *fs, struct ufs_inode *inode)
{
	struct ufs_inode **pp;

	if (!inode->keyed)
		return;
	for (pp = &fs->by_key[ufs_hash_key(inode->dev, inode->ino, fs->buckets)]; *pp;
	     pp = &(*pp)->next_by_key) {
		if (*pp == inode) {
			*pp = inode->next_by_key;
			break;
		}
	}
	inode->keyed = false;
}

static void table_unlink(struct ufs_fs *fs, struct ufs_inode *inode)
{
	struct ufs_inode **pp;

	for (pp = &fs->by_id[ufs_hash_nodeid(inode->nodeid, fs->buckets)]; *pp; pp = &(*pp)->next_by_id) {
		if (*pp == inode) {
			*pp = inode->next_by_id;
			break;
		}
	}
	key_unlink(fs, inode);
}

/* Double the table when it is full; a failed allocation just keeps chains longer. */
static void table_grow(struct ufs_fs *fs)
{
	size_t old = fs->buckets, n = old * 2;
	struct ufs_inode **by_id = calloc(n, sizeof(*by_id));
	struct ufs_inode **by_key = calloc(n, sizeof(*by_key));
	struct ufs_inode **old_id = fs->by_id;

	if (!by_id || !by_key) {
		free(by_id);
		free(by_key);
		return;
	}
	free(fs->by_key);
	fs->by_id = by_id;
	fs->by_key = by_key;
	fs->buckets = n;
	for (size_t i = 0; i < old; i++) {
		struct ufs_inode *inode = old_id[i];

		while (inode) {
			struct ufs_inode *next = inode->next_by_id;
			bool keyed = inode->keyed;

			table_link(fs, inode);
			if (!keyed)
				key_unlink(fs, inode);
			inode = next;
		}
	}
	free(old_id);
}

/* A new entry joins both indexes. */
static void table_insert_locked(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	if (fs->inode_count >= fs->buckets)
		table_grow(fs);
	table_link(fs, inode);
	fs->inode_count++;
}

static struct ufs_inode *find_by_id(struct ufs_fs *fs, uint64_t nodeid)
{
	struct ufs_inode *inode = fs->by_id[ufs_hash_nodeid(nodeid, fs->buckets)];

	while (inode && inode->nodeid != nodeid)
		inode = inode->next_by_id;
	return inode;
}

/* Where a name now leads to it; the export store learns a new parent. */
static struct ufs_inode *find_by_key(struct ufs_fs *fs, dev_t dev, ino_t ino)
{
	struct ufs_inode *inode = fs->by_key[ufs_hash_key(dev, ino, fs->buckets)];

	while (inode && (inode->ino != ino || inode->dev != dev))
		inode = inode->next_by_key;
	return inode;
}

/*
 * The inode for a nodeid the kernel sent, with a reference for the request.
 * NULL if the kernel names an inode it has forgotten (a broken request).
 */
struct ufs_inode *ufs_inode_get(struct ufs_fs *fs, uint64_t nodeid)
{
	struct ufs_inode *inode;
	bool reopen = false;

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_id(fs, nodeid);
	if (inode && inode->fd < 0 && !inode->handle && !inode->control) {
		/* unlinked, descriptor closed (ufs_inode_unlinked): gone */
		inode = NULL;
	} else if (inode) {
		pin_locked(fs, inode);
		reopen = inode->fd < 0 && inode->handle;
	}
	pthread_mutex_unlock(&fs->inode_lock);
	/* Pinned now: its descriptor stays until the matching put. */
	if (reopen && inode_reopen(fs, inode)) {
		ufs_inode_put(fs, inode);
		return NULL;	/* the file is gone (ESTALE) */
	}
	return inode;
}

/* Another reference for something that outlives the request (an open file). */
void ufs_inode_ref(struct ufs_fs *fs, struct ufs_inode *inode)
{
	pthread_mutex_lock(&fs->inode_lock);
	pin_locked(fs, inode);
	pthread_mutex_unlock(&fs->inode_lock);
}

/* The root and the control file live as long as the file system. */
static bool inode_unused(const struct ufs_inode *inode)
{
	return !inode->nlookup && !inode->refs && inode->nodeid != FUSE_ROOT_ID &&
	       !inode->control;
}

/* A dead inode leaves the tables; its handle stays behind in export.c. */
static void inode_release_locked(struct ufs_fs *fs, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&fs->inode_lock);
	ufs_export_keep_locked(&fs->exports, inode);
	table_unlink(fs, inode);
	lru_remove(fs, inode);
	if (inode->handle && inode->fd >= 0)
		fs->fds_open--;
	fs->inode_count--;
}

void ufs_inode_put(struct ufs_fs *fs, struct ufs_inode *inode)
{
	int evict[2] = { -1, -1 };
	bool dead;

	if (!inode)
		return;
	pthread_mutex_lock(&fs->inode_lock);
	dead = unpin_locked(fs, inode) && inode_unused(inode);
	if (dead)
		inode_release_locked(fs, inode);
	else if (inode->drop_fd && !inode->refs)
		evict[0] = fd_take_locked(fs, inode);	/* unlinked meanwhile */
	else
		lru_offer(fs, inode, evict, 2);
	pthread_mutex_unlock(&fs->inode_lock);
	close_evicted(evict, 2);
	if (dead)
		inode_free(fs, inode);
}

/*
 * Account one kernel lookup for the object fd refers to.  Takes ownership
 * of fd: it becomes the new inode's descriptor, or is closed if the inode
 * is already known.  Returns the inode with nlookup incremented, or NULL.
 */
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
int ufs_inode_find_or_insert(struct ufs_fs *fs, int fd, const struct stat *st,
			     uint64_t parent, struct ufs_inode **out)
{
	int evict[2] = { -1, -1 };
	struct ufs_inode *inode, *fresh;
	uint32_t slot = 0;
	int ret;

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_key(fs, st->st_dev, st->st_ino);
	if (inode && (inode->fd >= 0 || inode->control)) {
		parent_set_locked(fs, inode, parent);
		inode->nlookup++;
		record_lookups(fs, inode);
		pthread_mutex_unlock(&fs->inode_lock);
		if (fd >= 0)
			close(fd);
		*out = inode;
		return 0;
	}
	pthread_mutex_unlock(&fs->inode_lock);

	fresh = inode_new(st->st_dev, st->st_ino, st->st_mode, fd);
	if (!fresh) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	ret = fd >= 0 ? inode_handle_make(fs, fresh) : 0;
	if (ret) {
		inode_free(fs, fresh);
		return ret;
	}

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_key(fs, st->st_dev, st->st_ino);
	if (inode && entry_is_file(inode, fresh)) {
		parent_set_locked(fs, inode, parent);
		inode->nlookup++;
		record_lookups(fs, inode);
		if (inode->fd < 0 && inode->handle && fresh->fd >= 0) {
			/* An evicted descriptor comes back for free, found inside. */
			inode->fd = fresh->fd;
			inode->unverified = false;
			fresh->fd = -1;
			fs->fds_open++;
			lru_offer(fs, inode, evict, 2);
		}
		pthread_mutex_unlock(&fs->inode_lock);
		close_evicted(evict, 2);
		inode_free(fs, fresh);
		*out = inode;
		return 0;
	}
	if (inode)
		key_unlink(fs, inode);
	/* A file the kernel forgot comes back under its old node id, for its handles. */
	fresh->nodeid = ufs_export_reclaim_locked(&fs->exports, fresh->dev, fresh->ino,
						  fresh->handle, &slot);
	fresh->nlookup = 1;
	fresh->parent = parent;
	if (fresh->nodeid) {
		record_revived(fs, fresh, slot);
	} else {
		fresh->nodeid = nodeid_new_locked(fs);
		record_add(fs, fresh);
		parent_set_locked(fs, fresh, parent);
	}
	table_insert_locked(fs, fresh);
	if (fresh->handle) {
		fs->fds_open++;
		lru_offer(fs, fresh, evict, 2);
	}
	pthread_mutex_unlock(&fs->inode_lock);
	close_evicted(evict, 2);
	*out = fresh;
	return 0;
}

static struct ufs_inode *revive(struct ufs_fs *fs, uint64_t nodeid, bool dir_only);

/*
 * Whether a file revived from its handle is still inside SOURCE: a name in
 * the directory where a name last led to it (inode->parent), a directory
 * itself inside SOURCE.  A file moved since, out of SOURCE or within it
 * behind the daemon's back, is stale: its handle no longer opens it.
 */
static int found_in_parent(struct ufs_fs *fs, uint64_t parent, dev_t dev, ino_t ino)
{
	struct ufs_inode *dir;
	int ret;

	if (!parent)
		return -ESTALE;
	dir = ufs_inode_get(fs, parent);
	if (!dir)
		dir = revive(fs, parent, true);
	if (!dir)
		return -ESTALE;
	ret = dir->type == S_IFDIR ? ufs_inode_check_beneath(fs, dir) : -ESTALE;
	if (!ret)
		ret = ufs_check_in_dir(dir->fd, dev, ino);
	ufs_inode_put(fs, dir);
	return ret ? -ESTALE : 0;
}

/*
 * The kernel asks for a node id it forgot (LOOKUP "." from a file handle):
 * bring the inode back from its export record, pinned for the request with
 * no kernel lookups yet.  NULL (ESTALE) if there is no record, or the file
 * is gone or no longer inside SOURCE: a directory by its path, anything
 * else by its parent (found_in_parent).
 */
struct ufs_inode *ufs_inode_revive(struct ufs_fs *fs, uint64_t nodeid)
{
	return revive(fs, nodeid, false);
}

static struct ufs_inode *revive(struct ufs_fs *fs, uint64_t nodeid, bool dir_only)
{
	struct ufs_export_copy rec;
	struct ufs_inode *fresh = NULL;
	bool revived = false;
	uint32_t slot = 0;
	struct stat st;
	int fd, ret;

	pthread_mutex_lock(&fs->inode_lock);
	ret = ufs_export_copy_locked(&fs->exports, nodeid, &rec);
	pthread_mutex_unlock(&fs->inode_lock);
	if (ret)
		return ufs_inode_get(fs, nodeid);	/* revived meanwhile, or none */
	if (dir_only && rec.type != S_IFDIR) {
		free(rec.handle);
		return NULL;	/* a parent that is no directory: the record is wrong */
	}

	fd = open_by_handle_at(rec.mount_fd, rec.handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		ret = -errno;
	else if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	if (!ret && (st.st_dev != rec.dev || st.st_ino != rec.ino ||
		     (st.st_mode & S_IFMT) != rec.type))
		ret = -ESTALE;
	if (!ret)
		ret = S_ISDIR(st.st_mode) ? ufs_check_beneath_fd(fs, fd) :
					    found_in_parent(fs, rec.parent, rec.dev, rec.ino);
	if (!ret) {
		fresh = inode_new(rec.dev, rec.ino, rec.type, fd);
		ret = fresh ? 0 : -ENOMEM;
	}

	pthread_mutex_lock(&fs->inode_lock);
	/* Unless another LOOKUP revived it first, or the record went meanwhile. */
	if (ret != -ENOMEM && !find_by_id(fs, nodeid) &&
	    ufs_export_drop_locked(&fs->exports, nodeid, ret != 0, &slot))
		revived = !ret;
	if (revived) {
		fresh->nodeid = nodeid;
		fresh->parent = rec.parent;
		fresh->handle = rec.handle;
		fresh->mount_fd = rec.mount_fd;
		fresh->mount_id = rec.mount_id;
		fresh->refs = 1;
		rec.handle = NULL;
		record_revived(fs, fresh, slot);
		table_insert_locked(fs, fresh);
		fs->fds_open++;
	}
	pthread_mutex_unlock(&fs->inode_lock);
	free(rec.handle);
	if (revived)
		return fresh;
	if (fresh)
		inode_free(fs, fresh);	/* closes fd */
	else if (fd >= 0)
		close(fd);
	return ufs_inode_get(fs, nodeid);
}

/* One more kernel lookup of an inode a request holds (LOOKUP "."). */
void ufs_inode_add_lookup(struct ufs_fs *fs, struct ufs_inode *inode)
{
	pthread_mutex_lock(&fs->inode_lock);
	inode->nlookup++;
	record_lookups(fs, inode);
	pthread_mutex_unlock(&fs->inode_lock);
}

void ufs_inode_export_stats(struct ufs_fs *fs, struct ufs_exports *out)
{
	pthread_mutex_lock(&fs->inode_lock);
	*out = fs->exports;
	pthread_mutex_unlock(&fs->inode_lock);
}

/* ---- a successor's start (restore.c) ---- */

/* A descriptor on the mount with this id, for open_by_handle_at: known, or found. */
static int mount_fd_by_id(struct ufs_fs *fs, int mount_id)
{
	char *line = NULL, path[PATH_MAX];
	size_t cap = 0;
	int id, fd = -1;
	FILE *f;

	for (unsigned int i = 0; i < fs->nmount_fds; i++) {
		if (fs->mount_fds[i].mount_id == mount_id)
			return fs->mount_fds[i].fd;
	}
	if (fs->nmount_fds == sizeof(fs->mount_fds) / sizeof(fs->mount_fds[0]))
		return -1;
	/* A mount below SOURCE the predecessor met: any file on it will do. */
	f = fopen("/proc/self/mountinfo", "re");
	while (f && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%d %*d %*s %*s %4095s", &id, path) == 2 && id == mount_id) {
			fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			break;
		}
	}
	free(line);
	if (f)
		fclose(f);
	if (fd < 0)
		return -1;
	fs->mount_fds[fs->nmount_fds].mount_id = mount_id;
	fs->mount_fds[fs->nmount_fds].fd = fd;
	fs->nmount_fds++;
	return fd;
}

/*
 * A node id from a predecessor's record (slot is its record + 1): an
 * evicted inode, reopened by its handle when first used, with the kernel's
 * lookups; or, if the kernel had forgotten it, an export record again.
 * Before any request is served.
 */
int ufs_inode_restore(struct ufs_fs *fs, uint32_t slot, const struct ufs_record_node *n)
{
	struct file_handle *fh;
	struct ufs_inode *inode;
	int mfd, ret = 0;

	if (n->nodeid <= FUSE_ROOT_ID || !n->handle_bytes ||
	    n->handle_bytes > UFS_RECORD_HANDLE_MAX || !fs->handles)
		return -EINVAL;
	fh = malloc(sizeof(*fh) + n->handle_bytes);
	inode = fh ? inode_new(n->dev, n->ino, n->type, -1) : NULL;
	if (!inode) {
		free(fh);
		return -ENOMEM;
	}
	fh->handle_bytes = n->handle_bytes;
	fh->handle_type = n->handle_type;
	memcpy(fh->f_handle, n->handle, n->handle_bytes);
	inode->handle = fh;
	inode->nodeid = n->nodeid;
	inode->nlookup = n->nlookup;
	inode->parent = n->parent;
	inode->mount_id = n->mount_id;
	inode->record_slot = slot;
	inode->unverified = true;	/* inode_reopen proves it inside SOURCE */
	pthread_mutex_lock(&fs->inode_lock);
	mfd = mount_fd_by_id(fs, n->mount_id);
	if (mfd < 0 || find_by_id(fs, n->nodeid) || ufs_export_has_locked(&fs->exports, n->nodeid)) {
		ret = mfd < 0 ? -ENOENT : -EEXIST;
		ufs_record_node_drop(fs->record, slot);
	} else if (n->flags & UFS_RECORD_NODE_EXPORTED) {
		inode->mount_fd = mfd;
		inode->keyed = true;	/* what export.c asks of an inode it keeps */
		ufs_export_keep_locked(&fs->exports, inode);
	} else {
		bool dup = find_by_key(fs, n->dev, n->ino) != NULL;

		inode->mount_fd = mfd;
		table_insert_locked(fs, inode);
		/* Two records of one key: this one waits for its FORGET unkeyed. */
		if (dup)
			key_unlink(fs, inode);
		inode = NULL;
	}
	if (fs->next_nodeid <= n->nodeid)
		fs->next_nodeid = n->nodeid + 1;
	pthread_mutex_unlock(&fs->inode_lock);
	if (inode) {
		inode->record_slot = 0;	/* kept by export.c, or not ours to drop */
		inode_free(fs, inode);
	}
	return ret;
}

void ufs_inode_restore_done(struct ufs_fs *fs, uint64_t next_nodeid)
{
	pthread_mutex_lock(&fs->inode_lock);
	if (fs->next_nodeid < next_nodeid)
		fs->next_nodeid = next_nodeid;
	ufs_record_next_nodeid(fs->record, fs->next_nodeid);
	pthread_mutex_unlock(&fs->inode_lock);
}

/* The root: nodeid FUSE_ROOT_ID, never forgotten, owns fd (SOURCE). */
int ufs_inode_root_create(struct ufs_fs *fs, int fd, const struct stat *st)
{
	struct ufs_inode *root = inode_new(st->st_dev, st->st_ino, S_IFDIR, fd);

	if (!root)
		return -ENOMEM;
	root->nodeid = FUSE_ROOT_ID;
	root->nlookup = 1;
	pthread_mutex_lock(&fs->inode_lock);
	table_insert_locked(fs, root);
	pthread_mutex_unlock(&fs->inode_lock);
	fs->root = root;
	return 0;
}

/*
 * The last name of (dev, ino) is gone.  Unless something still uses the
 * inode, close our descriptor now: it alone would keep the file's space in
 * use until the kernel's FORGET.  Later uses of the inode get ESTALE.
 */
/*
 * A name of the file was removed through the mount.  Our descriptor goes
 * as soon as no request or open file pins the inode: with the last name
 * gone (nlink 0) it alone would keep the file's space in use until
 * FORGET, and NFS, which renames a file still in use to .nfsXXXX instead
 * of removing it (our descriptor is a use), would keep that file.  An
 * inode with a file handle reopens by it if the kernel asks again.
 */
void ufs_inode_unlinked(struct ufs_fs *fs, dev_t dev, ino_t ino, nlink_t nlink)
{
	struct ufs_inode *inode;
	int fd = -1;

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_key(fs, dev, ino);
	if (inode && inode != fs->root && inode->fd >= 0 && (!nlink || inode->handle)) {
		if (inode->refs)
			inode->drop_fd = true;	/* at its last ufs_inode_put */
		else
			fd = fd_take_locked(fs, inode);
	}
	pthread_mutex_unlock(&fs->inode_lock);
	if (fd >= 0)
		close(fd);
}

/* A name of (dev, ino) now lives in parent (RENAME): where to find it again. */
void ufs_inode_moved(struct ufs_fs *fs, dev_t dev, ino_t ino, uint64_t parent)
{
	struct ufs_inode *inode;

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_key(fs, dev, ino);
	if (inode)
		parent_set_locked(fs, inode, parent);
	pthread_mutex_unlock(&fs->inode_lock);
}

void ufs_inode_forget(struct ufs_fs *fs, uint64_t nodeid, uint64_t nlookup)
{
	struct ufs_inode *inode;
	bool dead = false;

	pthread_mutex_lock(&fs->inode_lock);
	inode = find_by_id(fs, nodeid);
	if (!inode) {
		pthread_mutex_unlock(&fs->inode_lock);
		ufs_log_once(UFS_LOG_WARN, "FORGET for unknown nodeid=%llu",
			     (unsigned long long)nodeid);
		return;
	}
	inode->nlookup = nlookup > inode->nlookup ? 0 : inode->nlookup - nlookup;
	record_lookups(fs, inode);
	dead = inode_unused(inode);
	if (dead)
		inode_release_locked(fs, inode);
	pthread_mutex_unlock(&fs->inode_lock);
	if (dead)
		inode_free(fs, inode);
}

size_t ufs_inode_count(struct ufs_fs *fs)
{
	size_t n;

	pthread_mutex_lock(&fs->inode_lock);
	n = fs->inode_count;
	pthread_mutex_unlock(&fs->inode_lock);
	return n;
}
