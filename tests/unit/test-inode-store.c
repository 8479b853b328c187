// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store (daemon/inode*.c) on real files in a fresh directory:
 * lookups and references, the LRU of descriptors and a reopen by handle,
 * FORGET, an unlinked file, an exported node id revived, and a restored
 * one proven inside SOURCE.  File handles (open_by_handle_at) need
 * CAP_DAC_READ_SEARCH: without it those cases are skipped, saying so.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "confine.h"
#include "fuse_abi.h"
#include "inode.h"
#include "inode_lookup.h"
#include "inode_revive.h"
#include "record.h"
#include "tap.h"

#define FD_CACHE 2

/* The store's lookup by node id, under its lock as the daemon calls it. */
static struct ufs_inode *find_id(struct ufs_inode_store *s, uint64_t nodeid)
{
	struct ufs_inode *inode;

	pthread_mutex_lock(&s->inode_lock);
	inode = ufs_inode_find_by_id_locked(s, nodeid);
	pthread_mutex_unlock(&s->inode_lock);
	return inode;
}

static char dir[64], outside[64];
static struct ufs_config cfg;
static struct ufs_confine confine;
static struct ufs_inode_store store;

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void make_file(const char *name)
{
	char p[128];
	int fd;

	path_of(p, sizeof(p), name);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(p);
		exit(1);
	}
	close(fd);
}

/* A LOOKUP of name in SOURCE's root: the entry, one kernel lookup more. */
static struct ufs_inode *lookup(const char *name)
{
	struct ufs_inode *inode = NULL;
	struct stat st;
	int fd = openat(confine.root_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st))
		return NULL;
	if (ufs_inode_find_or_insert(&store, fd, &st, FUSE_ROOT_ID, &inode))
		return NULL;
	return inode;
}

static size_t exports_count(void)
{
	struct ufs_exports ex;

	ufs_inode_export_stats(&store, &ex);
	return ex.count;
}

static void test_lookup_ref(void)
{
	struct ufs_inode *a, *again, *got;
	char p[128], q[128];

	make_file("a");
	a = lookup("a");
	ok(a && a->nodeid > FUSE_ROOT_ID, "a lookup makes an entry with a new node id");
	if (!a)
		return;
	is_int(a->nlookup, 1, "with one kernel lookup");
	is_int(ufs_inode_count(&store), 2, "the store holds the root and it");
	path_of(p, sizeof(p), "a");
	path_of(q, sizeof(q), "a-link");
	ok(!link(p, q), "a hard link to it");
	again = lookup("a-link");
	ok(again == a, "a lookup of the link finds the same entry");
	is_int(a->nlookup, 2, "and counts a second lookup");
	got = ufs_inode_get(&store, a->nodeid);
	ok(got == a, "get by node id finds it");
	is_int(a->refs, 1, "and pins it");
	ufs_inode_ref(&store, a);
	is_int(a->refs, 2, "a ref pins it again");
	ufs_inode_put(&store, a);
	ufs_inode_put(&store, a);
	is_int(a->refs, 0, "two puts unpin it");
	is_int(ufs_inode_count(&store), 2, "an unpinned entry the kernel knows stays");
	ufs_inode_forget(&store, a->nodeid, 2);
	is_int(ufs_inode_count(&store), 1, "FORGET of all its lookups ends it");
	ok(!ufs_inode_get(&store, 999999), "get of an unknown node id is NULL");
	unlink(q);
}

/* fd_cache = FD_CACHE: unpinned handle inodes beyond it give up their descriptor. */
static void test_lru(void)
{
	struct ufs_inode *in[4], *got;
	const char *names[4] = { "l0", "l1", "l2", "l3" };
	int i, open_fds = 0;

	for (i = 0; i < 4; i++) {
		make_file(names[i]);
		in[i] = lookup(names[i]);
		if (!in[i]) {
			ok(0, "lookup of %s", names[i]);
			return;
		}
	}
	for (i = 0; i < 4; i++)
		open_fds += in[i]->fd >= 0;
	is_int(open_fds, FD_CACHE, "only fd_cache unpinned inodes keep a descriptor");
	is_int(store.fds_open, FD_CACHE, "and the store counts as many");
	is_int(in[0]->fd, -1, "the oldest was evicted");
	is_int(in[1]->fd, -1, "and the next oldest");
	ok(in[3]->fd >= 0, "the newest keeps its descriptor");

	got = ufs_inode_get(&store, in[0]->nodeid);
	ok(got == in[0], "get of an evicted inode finds it");
	ok(in[0]->fd >= 0, "and reopens its descriptor by handle");
	is_int(store.fds_open, FD_CACHE, "pinned over the cache, an unpinned one goes instead");
	is_int(in[2]->fd, -1, "the oldest unpinned one");
	ufs_inode_put(&store, got);
	ok(in[0]->fd >= 0, "put: the reopened one is now the newest in the cache");
	is_int(store.fds_open, FD_CACHE, "still at most fd_cache");
	for (i = 0; i < 4; i++)
		ufs_inode_forget(&store, in[i]->nodeid, 1);
	is_int(store.fds_open, 0, "forgotten, they hold no descriptor");
}

static void test_unlinked(void)
{
	struct ufs_inode *u;
	char p[128];

	make_file("u");
	u = lookup("u");
	if (!u) {
		ok(0, "lookup of u");
		return;
	}
	path_of(p, sizeof(p), "u");
	unlink(p);
	ok(u->fd >= 0, "an unlinked file's unpinned inode still has its descriptor");
	ok(!ufs_inode_unlinked(&store, u->dev, u->ino, 0), "unpinned: nothing to wait for");
	is_int(u->fd, -1, "the last name gone: its descriptor closes at once");
	ok(!ufs_inode_get(&store, u->nodeid), "and a later use finds nothing (ESTALE)");
	ufs_inode_forget(&store, u->nodeid, 1);
}

/*
 * The last name of a file still pinned (an open file, perhaps one whose
 * RELEASE is under way): the unlink gets a ref of its own, and its put,
 * once the other goes, closes the descriptor.
 */
static void test_unlinked_while_pinned(void)
{
	struct ufs_inode *r, *open_file, *pinned;
	char p[128];

	make_file("r");
	r = lookup("r");
	if (!r) {
		ok(0, "lookup of r");
		return;
	}
	open_file = ufs_inode_get(&store, r->nodeid);	/* an open file's ref */
	path_of(p, sizeof(p), "r");
	unlink(p);
	pinned = ufs_inode_unlinked(&store, r->dev, r->ino, 0);
	ok(pinned == r, "pinned by an open file: returned with a ref of its own");
	ok(r->fd >= 0, "its descriptor stays while pinned");
	ok(ufs_inode_pinned_by_others(&store, r), "the open file pins it besides");
	ufs_inode_put(&store, open_file);		/* its RELEASE */
	ok(!ufs_inode_pinned_by_others(&store, r), "released: only the unlink's ref is left");
	ok(r->fd >= 0, "which still pins the descriptor");
	ufs_inode_put(&store, pinned);
	is_int(r->fd, -1, "its put was the last: the descriptor closes before the unlink replies");
	ufs_inode_forget(&store, r->nodeid, 1);
}

/* FORGET leaves an export record; LOOKUP "." brings the same node id back. */
static void test_revive(void)
{
	struct ufs_exports ex;
	struct ufs_inode *e, *r, *again;
	uint64_t id;
	size_t before = exports_count();

	make_file("e");
	e = lookup("e");
	if (!e) {
		ok(0, "lookup of e");
		return;
	}
	id = e->nodeid;
	ufs_inode_forget(&store, id, 1);
	is_int(exports_count(), before + 1, "a forgotten handle inode leaves an export record");
	ok(!ufs_inode_get(&store, id), "the node id is no entry any more");
	r = ufs_inode_revive(&store, id);
	ok(r && r->nodeid == id, "revive brings it back under its node id");
	if (!r)
		return;
	ok(r->fd >= 0, "with a descriptor");
	is_int(r->refs, 1, "pinned for the request");
	ufs_inode_export_stats(&store, &ex);
	is_int(ex.revived, 1, "counted as revived");
	is_int(ex.count, before, "its record is gone");
	ufs_inode_put(&store, r);
	is_int(exports_count(), before + 1, "no kernel lookup: back to a record at its put");
	again = lookup("e");
	ok(again && again->nodeid == id, "a lookup by name reclaims the old node id");
	is_int(exports_count(), before, "and takes the record");
	if (again)
		ufs_inode_forget(&store, again->nodeid, 1);
}

/* A record of file name (slot 0: the export store's kind), as a predecessor left it. */
static int record_of(const char *name, uint64_t nodeid, struct ufs_record_node *n)
{
	struct {
		struct file_handle fh;
		unsigned char bytes[MAX_HANDLE_SZ];
	} h;
	struct stat st;
	int mount_id;

	memset(n, 0, sizeof(*n));
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(confine.root_fd, name, &h.fh, &mount_id, 0) ||
	    fstatat(confine.root_fd, name, &st, AT_SYMLINK_NOFOLLOW) ||
	    h.fh.handle_bytes > UFS_RECORD_HANDLE_MAX)
		return -1;
	n->nodeid = nodeid;
	n->nlookup = 1;
	n->dev = st.st_dev;
	n->ino = st.st_ino;
	n->parent = FUSE_ROOT_ID;
	n->type = st.st_mode & S_IFMT;
	n->mount_id = mount_id;
	n->handle_type = h.fh.handle_type;
	n->handle_bytes = h.fh.handle_bytes;
	memcpy(n->handle, h.fh.f_handle, h.fh.handle_bytes);
	return 0;
}

static void test_restore(void)
{
	struct ufs_record_node n, moved;
	struct ufs_inode *r;
	char p[128], q[128];

	make_file("r");
	make_file("m");
	if (record_of("r", 5000, &n) || record_of("m", 5001, &moved)) {
		ok(0, "name_to_handle_at on the test directory");
		return;
	}
	is_int(ufs_inode_restore(&store, 0, &n), 0, "a predecessor's node id is restored");
	is_int(ufs_inode_restore(&store, 0, &n), -EEXIST, "twice is refused");
	r = find_id(&store, 5000);
	ok(r && r->fd < 0 && r->unverified, "evicted, and not yet proven inside");
	r = ufs_inode_get(&store, 5000);
	ok(r && r->fd >= 0, "its first use reopens it by handle");
	ok(r && !r->unverified, "found in its parent: proven inside SOURCE");
	ufs_inode_put(&store, r);

	/* Moved out of SOURCE while no daemon ran: its handle still opens it. */
	is_int(ufs_inode_restore(&store, 0, &moved), 0, "another one restored");
	path_of(p, sizeof(p), "m");
	snprintf(q, sizeof(q), "%s/m", outside);
	ok(!rename(p, q), "then moved out of SOURCE");
	ok(!ufs_inode_get(&store, 5001), "its first use is refused (ESTALE)");
	unlink(q);

	make_file("x");
	if (!record_of("x", 5002, &n)) {
		size_t before = exports_count();

		n.flags = UFS_RECORD_NODE_EXPORTED;
		is_int(ufs_inode_restore(&store, 0, &n), 0, "a node id the kernel had forgotten");
		ok(!find_id(&store, 5002), "is no entry");
		is_int(exports_count(), before + 1, "but an export record again");
		r = ufs_inode_revive(&store, 5002);
		ok(r && r->nodeid == 5002 && r->fd >= 0, "which LOOKUP \".\" revives");
		ufs_inode_put(&store, r);
	}
	ufs_inode_restore_done(&store, 7000);
	is_int(store.next_nodeid, 7000, "node ids go on after the predecessor's");
	ufs_inode_forget(&store, 5000, 1);
	ufs_inode_forget(&store, 5001, 1);
}

int main(void)
{
	struct stat st;
	int root_fd, proc_fd;

	ufs_config_defaults(&cfg);
	cfg.fd_cache = FD_CACHE;
	cfg.export_support = true;
	cfg.export_inodes = 16;
	cfg.inode_handles = UFS_HANDLES_PREFER;
	strcpy(dir, "/tmp/ufs-inode-XXXXXX");
	strcpy(outside, "/tmp/ufs-inode-out-XXXXXX");
	if (!mkdtemp(dir) || !mkdtemp(outside)) {
		perror("mkdtemp");
		return 1;
	}
	proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0 || root_fd < 0 || fstat(root_fd, &st) ||
	    ufs_confine_init(&confine, root_fd, proc_fd, st.st_dev, st.st_ino) ||
	    ufs_inode_store_init(&store, &cfg, &confine, NULL) ||
	    ufs_inode_root_create(&store, root_fd, &st) ||
	    ufs_inode_handles_probe(&store.handles)) {
		printf("Bail out! the store does not start on %s\n", dir);
		return 1;
	}
	ok(store.root && store.root->nodeid == FUSE_ROOT_ID, "the root has FUSE_ROOT_ID");
	test_lookup_ref();
	test_unlinked();
	test_unlinked_while_pinned();
	if (store.handles.usable) {
		test_lru();
		test_revive();
		test_restore();
	} else {
		printf("# file handles unusable here (open_by_handle_at needs "
		       "CAP_DAC_READ_SEARCH, and %s a file system that exports them): "
		       "LRU, revive and restore skipped\n", dir);
		ok(1, "# SKIP file handles unusable");
	}
	ufs_inode_store_destroy(&store);
	close(proc_fd);
	{
		char cmd[160];

		snprintf(cmd, sizeof(cmd), "rm -rf %s %s", dir, outside);
		if (system(cmd))
			printf("# could not remove %s\n", dir);
	}
	return t_done();
}
