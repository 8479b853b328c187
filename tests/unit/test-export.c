// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The export records (daemon/export.c): node ids the kernel forgot, kept
 * with their file handles, bounded by export_inodes (the oldest go first),
 * reclaimed by (dev, ino) when the same file (same handle) is found again,
 * and found, copied and dropped by node id.  Pure bookkeeping: the handles
 * here are made-up bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "tap.h"

struct fake_handle {
	struct file_handle fh;
	unsigned char bytes[8];
};

/*
 * The records are the inode store's, used under its inode_lock (the debug
 * build asserts it): here one lock, held by the test's one thread throughout.
 */
static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

static int exports_init(struct ufs_exports *ex, unsigned int limit)
{
	return ufs_exports_init(ex, limit, &store_lock);
}

static void handle_of(struct fake_handle *h, uint64_t seed)
{
	h->fh.handle_bytes = sizeof(h->bytes);
	h->fh.handle_type = 1;
	memcpy(h->bytes, &seed, sizeof(seed));
}

/* What a dying inode nodeid, file (dev 7, ino), leaves. */
static void keep(struct ufs_exports *ex, uint64_t nodeid, ino_t ino, bool keyed)
{
	struct fake_handle h;
	struct ufs_export_key k = {
		.nodeid = nodeid,
		.dev = 7,
		.ino = ino,
		.type = S_IFREG,
		.parent = 1,
		.handle = &h.fh,
		.mount_fd = 3,
		.mount_id = 42,
		.keyed = keyed,
	};

	handle_of(&h, ino);
	ufs_export_keep_locked(ex, &k);
}

static void test_bound(void)
{
	struct ufs_exports ex;

	is_int(exports_init(&ex, 3), 0, "init");
	for (uint64_t id = 10; id < 15; id++)
		keep(&ex, id, 100 + id, true);
	is_int(ex.count, 3, "no more records than the limit");
	is_int(ex.expired, 2, "the ones beyond it are counted as expired");
	ok(!ufs_export_has_locked(&ex, 10) && !ufs_export_has_locked(&ex, 11),
	   "the oldest two went");
	ok(ufs_export_has_locked(&ex, 12) && ufs_export_has_locked(&ex, 14), "the newest stay");
	keep(&ex, 20, 120, false);
	is_int(ex.count, 3, "an inode that lost its key leaves nothing");
	ok(!ufs_export_has_locked(&ex, 20), "not even at the limit's expense");
	ok(ufs_export_has_locked(&ex, 12), "so nothing older is dropped for it");
	ufs_exports_destroy(&ex);

	is_int(exports_init(&ex, 0), 0, "init with limit 0");
	keep(&ex, 10, 110, true);
	is_int(ex.count, 0, "limit 0 keeps none");
	ufs_exports_destroy(&ex);
}

/* Past the initial buckets: the tables grow and still find every record. */
static void test_many(void)
{
	struct ufs_exports ex;
	unsigned int found = 0;

	exports_init(&ex, 5000);
	for (uint64_t id = 1000; id < 6000; id++)
		keep(&ex, id, id, true);
	is_int(ex.count, 5000, "5000 records");
	ok(ex.buckets >= 4096, "the buckets grew");
	for (uint64_t id = 1000; id < 6000; id++)
		found += ufs_export_has_locked(&ex, id);
	is_int(found, 5000, "every one is found after the growth");
	keep(&ex, 6000, 6000, true);
	ok(!ufs_export_has_locked(&ex, 1000) && ufs_export_has_locked(&ex, 1001),
	   "one more drops exactly the oldest");
	ufs_exports_destroy(&ex);
}

static void test_reclaim(void)
{
	struct fake_handle same, other;
	struct ufs_exports ex;
	uint32_t slot = 99;

	exports_init(&ex, 10);
	keep(&ex, 30, 130, true);
	keep(&ex, 31, 131, true);
	handle_of(&same, 130);
	is_int(ufs_export_reclaim_locked(&ex, 7, 130, &same.fh, &slot), 30,
	       "the same file found again gets its old node id");
	is_int(slot, 0, "with its hand-over record (none here)");
	ok(!ufs_export_has_locked(&ex, 30), "and the record goes");
	is_int(ufs_export_reclaim_locked(&ex, 7, 130, &same.fh, &slot), 0,
	       "a second reclaim finds nothing");
	handle_of(&other, 999);
	is_int(ufs_export_reclaim_locked(&ex, 7, 131, &other.fh, &slot), 0,
	       "another file with the key (a new generation) gets no node id");
	ok(!ufs_export_has_locked(&ex, 31), "and the stale record goes all the same");
	is_int(ufs_export_reclaim_locked(&ex, 8, 131, &same.fh, &slot), 0,
	       "an unknown key finds nothing");
	is_int(ex.count, 0, "none left");
	ufs_exports_destroy(&ex);
}

static void test_copy_drop(void)
{
	struct ufs_export_copy c;
	struct ufs_exports ex;
	uint32_t slot = 0;

	exports_init(&ex, 10);
	keep(&ex, 40, 140, true);
	keep(&ex, 41, 141, true);
	is_int(ufs_export_copy_locked(&ex, 40, &c), 0, "a record copied out");
	ok(c.dev == 7 && c.ino == 140 && c.type == S_IFREG && c.parent == 1 && c.mount_fd == 3 &&
		   c.mount_id == 42,
	   "with its key, type, parent and mount");
	ok(c.handle && c.handle->handle_bytes == 8 &&
		   !memcmp(c.handle->f_handle, &(uint64_t){ 140 }, 8),
	   "and a copy of its handle");
	free(c.handle);
	is_int(ufs_export_copy_locked(&ex, 49, &c), -ESTALE, "no record: ESTALE");
	ok(ufs_export_drop_locked(&ex, 40, false, &slot), "dropped when revived");
	is_int(ex.revived, 1, "counted as revived");
	ok(!ufs_export_drop_locked(&ex, 40, false, &slot), "a second drop finds nothing");
	ok(ufs_export_drop_locked(&ex, 41, true, &slot), "dropped when stale");
	is_int(ex.stale, 1, "counted as stale");
	is_int(ex.count, 0, "none left");
	keep(&ex, 42, 142, true);
	ok(ex.oldest != NULL && ufs_export_has_locked(&ex, 42), "the list still takes records");
	ufs_exports_destroy(&ex);
}

int main(void)
{
	pthread_mutex_lock(&store_lock);
	test_bound();
	test_many();
	test_reclaim();
	test_copy_drop();
	return t_done();
}
