// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store: its tables, pins and the LRU of descriptors.
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
 *
 * The store's other files: entries found (and names removed) by name
 * (inode_lookup.c), those
 * that come back from a record (inode_revive.c), file handles and mount
 * descriptors (inode_handle.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "confine.h"
#include "fuse_abi.h"
#include "hash.h"
#include "inode.h"
#include "lockdep.h"
#include "log.h"
#include "record.h"

#define INODE_MIN_BUCKETS 1024

int ufs_inode_store_init(struct ufs_inode_store *inodes, const struct ufs_config *cfg,
			 const struct ufs_confine *confine,
			 void (*inode_release)(struct ufs_inode *inode))
{
	memset(inodes, 0, sizeof(*inodes));
	inodes->cfg = cfg;
	inodes->confine = confine;
	inodes->inode_release = inode_release;
	ufs_inode_handles_setup(&inodes->handles, cfg, confine);
	inodes->buckets = INODE_MIN_BUCKETS;
	inodes->by_id = calloc(inodes->buckets, sizeof(*inodes->by_id));
	inodes->by_key = calloc(inodes->buckets, sizeof(*inodes->by_key));
	if (!inodes->by_id || !inodes->by_key ||
	    ufs_exports_init(&inodes->exports,
			     inodes->cfg->export_support ? inodes->cfg->export_inodes : 0,
			     &inodes->inode_lock)) {
		free(inodes->by_id);
		free(inodes->by_key);
		ufs_inode_handles_destroy(&inodes->handles);
		return -ENOMEM;
	}
	inodes->next_nodeid = FUSE_ROOT_ID + 1;
	return pthread_mutex_init(&inodes->inode_lock, NULL) ? -ENOMEM : 0;
}

/* Where node records go for a successor, and the export records' with them. */
void ufs_inode_set_record(struct ufs_inode_store *inodes, struct ufs_record *record)
{
	inodes->record = record;
	inodes->exports.record = record;
}

void ufs_inode_free(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	/* What the file system hung on the inode (lock owners) goes first. */
	if (inodes->inode_release)
		inodes->inode_release(inode);
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

static bool lru_linked(const struct ufs_inode_store *inodes, const struct ufs_inode *inode)
{
	return inode->lru_prev || inodes->lru_head == inode;
}

static void lru_remove(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (!lru_linked(inodes, inode))
		return;
	if (inode->lru_prev)
		inode->lru_prev->lru_next = inode->lru_next;
	else
		inodes->lru_head = inode->lru_next;
	if (inode->lru_next)
		inode->lru_next->lru_prev = inode->lru_prev;
	else
		inodes->lru_tail = inode->lru_prev;
	inode->lru_prev = inode->lru_next = NULL;
}

static void lru_add(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	UFS_BUG_ON(lru_linked(inodes, inode) || inode->refs || !inode->handle || inode->fd < 0);
	inode->lru_prev = inodes->lru_tail;
	inode->lru_next = NULL;
	if (inodes->lru_tail)
		inodes->lru_tail->lru_next = inode;
	else
		inodes->lru_head = inode;
	inodes->lru_tail = inode;
}

/*
 * Close the oldest unpinned descriptors until at most fd_cache handle
 * inodes hold one.  Returns a descriptor to close after unlocking, or -1;
 * called repeatedly.
 */
static int lru_evict_one(struct ufs_inode_store *inodes)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	struct ufs_inode *victim = inodes->lru_head;
	int fd;

	if (!victim || inodes->fds_open <= inodes->cfg->fd_cache)
		return -1;
	UFS_BUG_ON(victim->refs || victim->fd < 0);
	lru_remove(inodes, victim);
	fd = victim->fd;
	victim->fd = -1;
	inodes->fds_open--;
	return fd;
}

/*
 * An unpinned inode that holds a descriptor it could give up joins the LRU,
 * and the cache sheds its oldest beyond fd_cache into evict[] (closed by the
 * caller after unlocking).
 */
void ufs_inode_lru_offer_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode, int *evict,
				int nevict)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	int i = 0;

	if (inode->refs || !inode->handle || inode->fd < 0)
		return;
	lru_add(inodes, inode);
	while (i < nevict && (evict[i] = lru_evict_one(inodes)) >= 0)
		i++;
}

static void pin_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (inode->refs++ == 0)
		lru_remove(inodes, inode);
	inode->coh_sent = 0;	/* its reply may cache it again (inode.h) */
	inode->used = true;	/* inode_prune.c's CLOCK */
	UFS_BUG_ON(!inode->refs || lru_linked(inodes, inode));
}

/* Returns whether that was the last pin. */
static bool unpin_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	UFS_BUG_ON(!inode->refs);
	return --inode->refs == 0;
}

/* Take the descriptor of an unpinned inode away from it; the caller closes it. */
int ufs_inode_fd_take_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	int fd = inode->fd;

	lru_remove(inodes, inode);
	if (inode->handle && fd >= 0)
		inodes->fds_open--;
	inode->fd = -1;
	inode->drop_fd = false;
	return fd;
}

void ufs_inode_close_evicted(int *evict, int n)
{
	for (int i = 0; i < n && evict[i] >= 0; i++)
		close(evict[i]);
}

/* A new entry for (st_dev, st_ino), owning fd (or -1); not in the tables yet. */
struct ufs_inode *ufs_inode_new(dev_t dev, ino_t ino, mode_t type, int fd)
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

/* A restored inode's first reopen proves it inside SOURCE (inodes->verify). */
static int reopen_verify(struct ufs_inode_store *inodes, struct ufs_inode *inode, int fd)
{
	if (!__atomic_load_n(&inode->unverified, __ATOMIC_RELAXED))
		return 0;
	return inodes->verify(inodes, inode, fd);
}

/*
 * The descriptor of a pinned inode whose fd was evicted, or of one a
 * predecessor's record restored (checked by reopen_verify).  An evicted
 * inode of this daemon was found inside by a LOOKUP and keeps working
 * wherever it is moved since, as an open file would: whether its
 * descriptor was evicted must not change what it serves.
 */
static int inode_reopen(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	int fd = open_by_handle_at(inode->mount_fd, inode->handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int evict[4] = { -1, -1, -1, -1 };
	struct stat st;

	if (fd < 0)
		return -errno;
	/* The file its handle and key name (a predecessor's record says both). */
	if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) || st.st_dev != inode->dev ||
	    st.st_ino != inode->ino || (st.st_mode & S_IFMT) != inode->type ||
	    reopen_verify(inodes, inode, fd)) {
		close(fd);
		return -ESTALE;
	}
	pthread_mutex_lock(&inodes->inode_lock);
	__atomic_store_n(&inode->unverified, false, __ATOMIC_RELAXED);
	if (inode->fd < 0) {
		inode->fd = fd;
		inodes->fds_open++;
		fd = -1;
		/* Over the cache while pinned: evict someone unpinned instead. */
		for (int i = 0; i < 4 && (evict[i] = lru_evict_one(inodes)) >= 0; i++)
			;
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	if (fd >= 0)
		close(fd);	/* another thread reopened it first */
	ufs_inode_close_evicted(evict, 4);
	return 0;
}

void ufs_inode_store_destroy(struct ufs_inode_store *inodes)
{
	for (size_t i = 0; i < inodes->buckets; i++) {
		struct ufs_inode *inode = inodes->by_id[i];

		while (inode) {
			struct ufs_inode *next = inode->next_by_id;

			ufs_inode_free(inodes, inode);
			inode = next;
		}
	}
	free(inodes->by_id);
	free(inodes->by_key);
	inodes->by_id = inodes->by_key = NULL;
	ufs_fids_destroy(&inodes->fids);
	ufs_exports_destroy(&inodes->exports);
	ufs_inode_handles_destroy(&inodes->handles);
	pthread_mutex_destroy(&inodes->inode_lock);
}

/* Its lookups in its hand-over record (inode_lookup.c says which are recorded). */
void ufs_inode_record_lookups_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	ufs_record_node_lookups(inodes->record, inode->record_slot, inode->nlookup);
}

static void table_link(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	size_t i = ufs_hash_nodeid(inode->nodeid, inodes->buckets);
	size_t k = ufs_hash_key(inode->dev, inode->ino, inodes->buckets);

	inode->next_by_id = inodes->by_id[i];
	inodes->by_id[i] = inode;
	inode->next_by_key = inodes->by_key[k];
	inodes->by_key[k] = inode;
	inode->keyed = true;
}

void ufs_inode_unkey_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	struct ufs_inode **pp;

	if (!inode->keyed)
		return;
	for (pp = &inodes->by_key[ufs_hash_key(inode->dev, inode->ino, inodes->buckets)]; *pp;
	     pp = &(*pp)->next_by_key) {
		if (*pp == inode) {
			*pp = inode->next_by_key;
			break;
		}
	}
	inode->keyed = false;
}

static void table_unlink(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	struct ufs_inode **pp;

	for (pp = &inodes->by_id[ufs_hash_nodeid(inode->nodeid, inodes->buckets)]; *pp;
	     pp = &(*pp)->next_by_id) {
		if (*pp == inode) {
			*pp = inode->next_by_id;
			break;
		}
	}
	ufs_inode_unkey_locked(inodes, inode);
}

/* Double the table when it is full; a failed allocation just keeps chains longer. */
static void table_grow(struct ufs_inode_store *inodes)
{
	size_t old = inodes->buckets, n = old * 2;
	struct ufs_inode **by_id = calloc(n, sizeof(*by_id));
	struct ufs_inode **by_key = calloc(n, sizeof(*by_key));
	struct ufs_inode **old_id = inodes->by_id;

	if (!by_id || !by_key) {
		free(by_id);
		free(by_key);
		return;
	}
	free(inodes->by_key);
	inodes->by_id = by_id;
	inodes->by_key = by_key;
	inodes->buckets = n;
	for (size_t i = 0; i < old; i++) {
		struct ufs_inode *inode = old_id[i];

		while (inode) {
			struct ufs_inode *next = inode->next_by_id;
			bool keyed = inode->keyed;

			table_link(inodes, inode);
			if (!keyed)
				ufs_inode_unkey_locked(inodes, inode);
			inode = next;
		}
	}
	free(old_id);
}

/* A new entry joins both indexes. */
void ufs_inode_insert_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	if (inodes->inode_count >= inodes->buckets)
		table_grow(inodes);
	table_link(inodes, inode);
	ufs_fids_add(&inodes->fids, &inode->fid, inode->handle);
	inode->used = true;
	inodes->inode_count++;
}

struct ufs_inode *ufs_inode_find_by_id_locked(struct ufs_inode_store *inodes, uint64_t nodeid)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	struct ufs_inode *inode = inodes->by_id[ufs_hash_nodeid(nodeid, inodes->buckets)];

	while (inode && inode->nodeid != nodeid)
		inode = inode->next_by_id;
	return inode;
}

/* Where a name now leads to it; the export store learns a new parent. */
struct ufs_inode *ufs_inode_find_by_key_locked(struct ufs_inode_store *inodes, dev_t dev, ino_t ino)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	struct ufs_inode *inode = inodes->by_key[ufs_hash_key(dev, ino, inodes->buckets)];

	while (inode && (inode->ino != ino || inode->dev != dev))
		inode = inode->next_by_key;
	return inode;
}

/*
 * The inode for a nodeid the kernel sent, with a reference for the request.
 * NULL if the kernel names an inode it has forgotten (a broken request).
 */
struct ufs_inode *ufs_inode_get(struct ufs_inode_store *inodes, uint64_t nodeid)
{
	struct ufs_inode *inode;
	bool reopen = false;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_id_locked(inodes, nodeid);
	if (inode && inode->fd < 0 && !inode->handle && !inode->control) {
		/* unlinked, descriptor closed (ufs_inode_unlinked): gone */
		inode = NULL;
	} else if (inode) {
		pin_locked(inodes, inode);
		reopen = inode->fd < 0 && inode->handle;
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	/* Pinned now: its descriptor stays until the matching put. */
	if (reopen && inode_reopen(inodes, inode)) {
		ufs_inode_put(inodes, inode);
		return NULL;	/* the file is gone (ESTALE) */
	}
	return inode;
}

/*
 * The inode of the file (dev, ino), pinned, if the store has it with a
 * descriptor; else NULL.  Never reopens: for a name about to be removed.
 */
struct ufs_inode *ufs_inode_get_by_key(struct ufs_inode_store *inodes, dev_t dev, ino_t ino)
{
	struct ufs_inode *inode;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_key_locked(inodes, dev, ino);
	if (inode && (inode == inodes->root || inode->fd < 0))
		inode = NULL;
	if (inode)
		pin_locked(inodes, inode);
	pthread_mutex_unlock(&inodes->inode_lock);
	return inode;
}

/* Another reference for something that outlives the request (an open file). */
void ufs_inode_ref(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	pthread_mutex_lock(&inodes->inode_lock);
	pin_locked(inodes, inode);
	pthread_mutex_unlock(&inodes->inode_lock);
}

/* The root and the control file live as long as the file system. */
static bool inode_unused(const struct ufs_inode *inode)
{
	return !inode->nlookup && !inode->refs && inode->nodeid != FUSE_ROOT_ID &&
	       !inode->control;
}

/* What export.c keeps of an inode: its view of it. */
void ufs_inode_export_key(const struct ufs_inode *inode, struct ufs_export_key *key)
{
	*key = (struct ufs_export_key){
		.nodeid = inode->nodeid,
		.dev = inode->dev,
		.ino = inode->ino,
		.type = inode->type,
		.parent = inode->parent,
		.handle = inode->handle,
		.mount_fd = inode->mount_fd,
		.mount_id = inode->mount_id,
		.keyed = inode->keyed,
		.record_slot = inode->record_slot,
	};
}

/* A dead inode leaves the tables; its handle stays behind in export.c. */
static void inode_release_locked(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	struct ufs_export_key key;

	ufs_inode_export_key(inode, &key);
	ufs_export_keep_locked(&inodes->exports, &key);
	table_unlink(inodes, inode);
	ufs_fids_del(&inodes->fids, &inode->fid);
	lru_remove(inodes, inode);
	if (inode->handle && inode->fd >= 0)
		inodes->fds_open--;
	inodes->inode_count--;
}

void ufs_inode_put(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	int evict[2] = { -1, -1 };
	bool dead;

	if (!inode)
		return;
	pthread_mutex_lock(&inodes->inode_lock);
	dead = unpin_locked(inodes, inode) && inode_unused(inode);
	if (dead)
		inode_release_locked(inodes, inode);
	else if (inode->drop_fd && !inode->refs)
		evict[0] = ufs_inode_fd_take_locked(inodes, inode);	/* unlinked meanwhile */
	else
		ufs_inode_lru_offer_locked(inodes, inode, evict, 2);
	pthread_mutex_unlock(&inodes->inode_lock);
	ufs_inode_close_evicted(evict, 2);
	if (dead)
		ufs_inode_free(inodes, inode);
}

bool ufs_inode_pinned_by_others(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	bool others;

	pthread_mutex_lock(&inodes->inode_lock);
	others = inode->refs > 1;
	pthread_mutex_unlock(&inodes->inode_lock);
	return others;
}

void ufs_inode_export_stats(struct ufs_inode_store *inodes, struct ufs_exports *out)
{
	pthread_mutex_lock(&inodes->inode_lock);
	*out = inodes->exports;
	pthread_mutex_unlock(&inodes->inode_lock);
}

/* The root: nodeid FUSE_ROOT_ID, never forgotten, owns fd (SOURCE). */
int ufs_inode_root_create(struct ufs_inode_store *inodes, int fd, const struct stat *st)
{
	struct ufs_inode *root = ufs_inode_new(st->st_dev, st->st_ino, S_IFDIR, fd);

	if (!root)
		return -ENOMEM;
	root->nodeid = FUSE_ROOT_ID;
	root->nlookup = 1;
	pthread_mutex_lock(&inodes->inode_lock);
	ufs_inode_insert_locked(inodes, root);
	pthread_mutex_unlock(&inodes->inode_lock);
	inodes->root = root;
	return 0;
}

void ufs_inode_forget(struct ufs_inode_store *inodes, uint64_t nodeid, uint64_t nlookup)
{
	struct ufs_inode *inode;
	bool dead = false;

	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_id_locked(inodes, nodeid);
	if (!inode) {
		pthread_mutex_unlock(&inodes->inode_lock);
		ufs_log_once(UFS_LOG_WARN, "FORGET for unknown nodeid=%llu",
			     (unsigned long long)nodeid);
		return;
	}
	inode->nlookup = nlookup > inode->nlookup ? 0 : inode->nlookup - nlookup;
	ufs_inode_record_lookups_locked(inodes, inode);
	dead = inode_unused(inode);
	if (!inode->nlookup && inode->prune_asked) {
		inodes->prune_forgets++;
		inode->prune_asked = false;
	}
	if (dead)
		inode_release_locked(inodes, inode);
	pthread_mutex_unlock(&inodes->inode_lock);
	if (dead)
		ufs_inode_free(inodes, inode);
}

/*
 * fn on every inode the kernel may name, under inode_lock (fn may take
 * inode->lock, nothing that takes inode_lock): for a paused daemon's
 * hand-over (fs_lock.c).
 */
void ufs_inode_for_each(struct ufs_inode_store *inodes,
			void (*fn)(void *arg, struct ufs_inode *inode), void *arg)
{
	pthread_mutex_lock(&inodes->inode_lock);
	for (size_t i = 0; i < inodes->buckets; i++) {
		for (struct ufs_inode *inode = inodes->by_id[i]; inode; inode = inode->next_by_id)
			fn(arg, inode);
	}
	pthread_mutex_unlock(&inodes->inode_lock);
}

size_t ufs_inode_count(struct ufs_inode_store *inodes)
{
	size_t n;

	pthread_mutex_lock(&inodes->inode_lock);
	n = inodes->inode_count;
	pthread_mutex_unlock(&inodes->inode_lock);
	return n;
}

uint64_t ufs_inode_prune_forgets(struct ufs_inode_store *inodes)
{
	uint64_t n;

	pthread_mutex_lock(&inodes->inode_lock);
	n = inodes->prune_forgets;
	pthread_mutex_unlock(&inodes->inode_lock);
	return n;
}

int ufs_inode_check_beneath(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	if (inode == inodes->root || inode->control)
		return 0;
	if (inode->type == S_IFDIR)
		return ufs_check_beneath_dir(inodes->confine, inode->fd, &inode->beneath_seen);
	return ufs_check_beneath_fd(inodes->confine, inode->fd);
}

/*
 * A directory moved out of SOURCE stays out of reach through descriptors the
 * clients hold on it: its listing, attributes and extended attributes too,
 * not only the names in it.  Files keep working, as open files would
 * locally wherever they are moved.
 */
int ufs_inode_dir_beneath(struct ufs_inode_store *inodes, struct ufs_inode *inode)
{
	return inode->type == S_IFDIR ? ufs_inode_check_beneath(inodes, inode) : 0;
}
