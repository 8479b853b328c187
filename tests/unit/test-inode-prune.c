// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * inode_prune.c's choice of victims, on a store of made-up inodes (no
 * backing files): the CLOCK gives every used inode a second chance, picks
 * the unused ones the kernel holds and nothing pins, never the root, the
 * control file, a pinned or a forgotten inode, never one twice in a turn,
 * keeps to its batch, and a FORGET after a PRUNE is counted.
 */
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
#include "inode_prune.h"
#include "tap.h"

#define N 200
#define BASE 1000

static struct ufs_config cfg;
static struct ufs_confine confine;
static struct ufs_inode_store store;
static struct ufs_inode *node[N];
static size_t hand;

static struct ufs_inode *add(uint64_t nodeid, uint64_t nlookup)
{
	struct ufs_inode *inode = ufs_inode_new(1, nodeid, S_IFREG, -1);

	if (!inode) {
		printf("Bail out! out of memory\n");
		exit(1);
	}
	inode->nodeid = nodeid;
	inode->nlookup = nlookup;
	pthread_mutex_lock(&store.inode_lock);
	ufs_inode_insert_locked(&store, inode);
	pthread_mutex_unlock(&store.inode_lock);
	return inode;
}

/* One whole turn of the hand (twice the table: the table has no fixed start). */
static size_t pick(uint64_t *ids, size_t max)
{
	size_t n;

	pthread_mutex_lock(&store.inode_lock);
	n = ufs_inode_prune_pick_locked(&store, &hand, store.buckets, ids, max);
	pthread_mutex_unlock(&store.inode_lock);
	return n;
}

static bool has(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++) {
		if (ids[i] == id)
			return true;
	}
	return false;
}

static bool no_dups(const uint64_t *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++) {
			if (ids[i] == ids[j])
				return false;
		}
	}
	return true;
}

int main(void)
{
	static uint64_t ids[4 * N];
	struct ufs_inode *pinned, *forgotten, *control;
	char dir[] = "/tmp/ufs-prune-XXXXXX";
	size_t n, total;
	bool bad = false;
	struct stat st;
	int root_fd, proc_fd;

	ufs_config_defaults(&cfg);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	proc_fd = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	root_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (proc_fd < 0 || root_fd < 0 || fstat(root_fd, &st) ||
	    ufs_confine_init(&confine, root_fd, proc_fd, st.st_dev, st.st_ino) ||
	    ufs_inode_store_init(&store, &cfg, &confine, NULL) ||
	    ufs_inode_root_create(&store, root_fd, &st)) {
		printf("Bail out! the store does not start on %s\n", dir);
		return 1;
	}
	for (int i = 0; i < N; i++)
		node[i] = add(BASE + i, 1);
	pinned = add(BASE + N, 1);
	ufs_inode_ref(&store, pinned);
	forgotten = add(BASE + N + 1, 0);	/* no lookup left: the kernel forgot it */
	control = add(BASE + N + 2, 1);
	control->control = 1;

	/* New entries were just used: the first turn only clears their bits. */
	n = pick(ids, 4 * N);
	is_int((int)n, 0, "a fresh store: every inode gets its second chance");
	n = pick(ids, 4 * N);
	is_int((int)n, N, "the next turn: every unused inode the kernel holds");
	ok(no_dups(ids, n), "no node id twice in a turn");
	ok(!has(ids, n, FUSE_ROOT_ID), "never the root");
	ok(!has(ids, n, pinned->nodeid), "never a pinned inode (a request, an open file)");
	ok(!has(ids, n, forgotten->nodeid), "never one the kernel holds no lookup on");
	ok(!has(ids, n, control->nodeid), "never the control file");

	/* Half of them used again: only the other half goes. */
	for (int i = 0; i < N; i += 2) {
		ufs_inode_ref(&store, node[i]);
		ufs_inode_put(&store, node[i]);
	}
	n = pick(ids, 4 * N);
	is_int((int)n, N / 2, "after some were used: the unused half");
	for (size_t i = 0; i < n; i++)
		bad |= (ids[i] - BASE) % 2 == 0;
	ok(!bad, "none of the recently used");

	/*
	 * Asked for but not let go of, they stay victims; the others lost their
	 * bits in that turn.  So the next turn has all N, in small batches: the
	 * hand goes on where it stopped, no id twice.
	 */
	total = 0;
	bad = false;
	for (int turn = 0; turn < 3 * N && total < N; turn++) {
		n = pick(ids + total, N - total < 7 ? N - total : 7);
		if (n > 7)
			bad = true;
		total += n;
	}
	ok(!bad, "a batch never holds more than asked");
	is_int((int)total, N, "batches of 7 cover every victim of the turn");
	ok(no_dups(ids, total), "and none twice");

	/* The kernel let go of one it was asked for: its FORGET counts. */
	ufs_inode_forget(&store, ids[0], 1);
	is_int((int)ufs_inode_prune_forgets(&store), 1, "a FORGET after a PRUNE is counted");
	ufs_inode_forget(&store, pinned->nodeid, 1);
	is_int((int)ufs_inode_prune_forgets(&store), 1, "one never asked for is not");
	ufs_inode_put(&store, pinned);

	ufs_inode_store_destroy(&store);
	close(proc_fd);
	rmdir(dir);
	return t_done();
}
