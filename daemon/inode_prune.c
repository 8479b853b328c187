// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The bound on the inode store (inode_limit).
 *
 * Every inode the kernel holds a lookup on has a record in the store, so
 * long entry and attribute timeouts let the kernel make the daemon keep as
 * many records as it keeps inodes.  Past the bound a thread of its own (not
 * a worker: writing a notification may wait on the kernel's locks, and a
 * request handler's kernel may hold them while it waits for the reply)
 * asks the kernel to let go of the least recently used ones:
 * FUSE_NOTIFY_PRUNE (7.45) with their node ids, in batches.  The kernel
 * drops those it can (no open file, no cwd, no dentry in use:
 * fs/fuse/inode.c fuse_try_prune_one_inode) and sends their FORGETs, which
 * free the records as any FORGET does.  A directory goes only after the
 * names below it: a child's dentry holds its parent's.
 *
 * Which are least recently used is a CLOCK: the store sets an inode's used
 * bit where it already holds inode_lock (a pin, a lookup: no cost on the
 * hot path), and the hand here clears it as it passes, walking the by-id
 * table a few buckets per hold of the lock, so no request waits long for
 * it.  Note that the daemon sees only the uses the kernel does not answer
 * from its cache; an inode pruned while the kernel still uses it costs one
 * LOOKUP later, never a wrong answer.
 *
 * Without PRUNE (protocol < 7.45) replies carry no entry or attribute
 * timeout while the store is over the bound: the kernel then deletes a
 * dentry as soon as nothing uses it (fuse_dentry_delete: an expired
 * dentry is not kept), and its inode's FORGET follows.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuse_abi.h"
#include "inode.h"
#include "inode_prune.h"
#include "lockdep.h"
#include "log.h"

#define PRUNE_BATCH 512		/* node ids per notification: the kernel's own batch */
#define PRUNE_SCAN 256		/* buckets walked per hold of inode_lock */
#define PRUNE_IDLE_MS 250	/* under the bound: how often the count is looked at */
#define PRUNE_BUSY_MS 20	/* over it: time for the FORGETs to come back */
#define PRUNE_BACKOFF_MS 2000	/* nothing could go: ask again this seldom */

static const char *const mode_names[] = {
	[UFS_PRUNE_OFF] = "off",
	[UFS_PRUNE_NOTIFY] = "notify",
	[UFS_PRUNE_TIMEOUTS] = "timeouts",
};

const char *ufs_prune_mode_name(int mode)
{
	return mode >= 0 && mode <= UFS_PRUNE_TIMEOUTS ? mode_names[mode] : "?";
}

/* The root and the control file live as long as the file system. */
static bool prunable(const struct ufs_inode_store *inodes, const struct ufs_inode *inode)
{
	return inode->nlookup && !inode->refs && inode != inodes->root && !inode->control &&
	       inode->nodeid != FUSE_ROOT_ID;
}

size_t ufs_inode_prune_pick_locked(struct ufs_inode_store *inodes, size_t *hand, size_t nbuckets,
				   uint64_t *ids, size_t max)
{
	UFS_ASSERT_HELD(&inodes->inode_lock);
	size_t n = 0, b = *hand % inodes->buckets;

	for (size_t walked = 0; walked < nbuckets && n < max; walked++) {
		size_t fit = 0;
		struct ufs_inode *inode;

		/* A bucket goes whole or waits: its used bits stay for its turn. */
		for (inode = inodes->by_id[b]; inode; inode = inode->next_by_id)
			fit += prunable(inodes, inode) && !inode->used;
		if (n + fit > max && n)
			break;
		for (inode = inodes->by_id[b]; inode; inode = inode->next_by_id) {
			if (!prunable(inodes, inode))
				continue;
			if (inode->used) {
				inode->used = false;
				inode->prune_asked = false;
			} else if (n < max) {
				inode->prune_asked = true;
				ids[n++] = inode->nodeid;
			}
		}
		b = (b + 1) % inodes->buckets;
	}
	*hand = b;
	return n;
}

/*
 * Read by every entry and attribute reply: a relaxed read of the count the
 * store keeps under its lock, so the first reply past the bound already
 * carries no timeout (a stale count errs by a reply or two).
 */
bool ufs_inode_prune_short(const struct ufs_inode_prune *p)
{
	return __atomic_load_n(&p->mode, __ATOMIC_RELAXED) == UFS_PRUNE_TIMEOUTS &&
	       __atomic_load_n(&p->inodes->inode_count, __ATOMIC_RELAXED) > p->limit;
}

/* Sleeps ms, or less if asked to stop; returns whether it was. */
static bool prune_sleep(struct ufs_inode_prune *p, unsigned int ms)
{
	struct timespec until;
	bool stop;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->lock);
	while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &until) != ETIMEDOUT)
		;
	stop = p->stop;
	pthread_mutex_unlock(&p->lock);
	return stop;
}

struct prune_msg {
	struct fuse_notify_prune_out hdr;
	uint64_t ids[PRUNE_BATCH];
};

/* One notification; false if the kernel does not take PRUNE after all. */
static bool prune_send(struct ufs_inode_prune *p, struct prune_msg *msg, size_t n)
{
	int ret;

	msg->hdr = (struct fuse_notify_prune_out){ .count = n };
	ret = p->notify(p->arg, msg, sizeof(msg->hdr) + n * sizeof(msg->ids[0]));
	if (ret == -EINVAL || ret == -ENOSYS) {
		ufs_warn("inode_limit: the kernel refuses FUSE_NOTIFY_PRUNE (%s): "
			 "no timeouts while over the bound instead",
			 strerror(-ret));
		__atomic_store_n(&p->mode, UFS_PRUNE_TIMEOUTS, __ATOMIC_RELAXED);
		return false;
	}
	if (ret && ret != -ENOENT)
		ufs_log_once(UFS_LOG_WARN, "inode_limit: FUSE_NOTIFY_PRUNE: %s", strerror(-ret));
	__atomic_add_fetch(&p->notifications, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->nodeids, n, __ATOMIC_RELAXED);
	return true;
}

/*
 * Ask for want node ids at most, walking the table at most twice (the first
 * turn may only clear used bits).  Returns how many were asked for.
 */
static size_t prune_round(struct ufs_inode_prune *p, struct prune_msg *msg, size_t want)
{
	struct ufs_inode_store *inodes = p->inodes;
	size_t asked = 0, walked = 0, buckets;

	do {
		size_t n, max = want - asked < PRUNE_BATCH ? want - asked : PRUNE_BATCH;

		pthread_mutex_lock(&inodes->inode_lock);
		n = ufs_inode_prune_pick_locked(inodes, &p->hand, PRUNE_SCAN, msg->ids, max);
		buckets = inodes->buckets;
		pthread_mutex_unlock(&inodes->inode_lock);
		walked += PRUNE_SCAN;
		if (n && !prune_send(p, msg, n))
			break;
		asked += n;
	} while (asked < want && walked < 2 * buckets);
	return asked;
}

static void *prune_main(void *arg)
{
	struct ufs_inode_prune *p = arg;
	struct prune_msg *msg = malloc(sizeof(*msg));
	unsigned int wait_ms = PRUNE_IDLE_MS;
	size_t last = SIZE_MAX;

	pthread_setname_np(pthread_self(), "uringfs-prune");
	if (!msg) {
		ufs_err("inode_limit: out of memory: the store is not bounded");
		return NULL;
	}
	while (!prune_sleep(p, wait_ms)) {
		size_t count = ufs_inode_count(p->inodes);

		/* Without PRUNE the replies do it all (ufs_inode_prune_short). */
		if (count <= p->limit ||
		    __atomic_load_n(&p->mode, __ATOMIC_RELAXED) != UFS_PRUNE_NOTIFY) {
			wait_ms = PRUNE_IDLE_MS;
			last = SIZE_MAX;
			continue;
		}
		/* Down to seven eighths of the bound, so it is not asked at every new inode. */
		prune_round(p, msg, count - p->limit + p->limit / 8);
		/* Nothing went since the last round: what is left is in use; ask seldom. */
		if (count >= last)
			wait_ms = wait_ms * 2 < PRUNE_BACKOFF_MS ? wait_ms * 2 : PRUNE_BACKOFF_MS;
		else
			wait_ms = PRUNE_BUSY_MS;
		last = count;
	}
	free(msg);
	return NULL;
}

int ufs_inode_prune_start(struct ufs_inode_prune *p, struct ufs_inode_store *inodes, size_t limit,
			  bool can_prune, ufs_prune_notify_fn notify, void *arg)
{
	pthread_condattr_t attr;
	int ret;

	memset(p, 0, sizeof(*p));
	p->inodes = inodes;
	p->limit = limit;
	p->notify = notify;
	p->arg = arg;
	p->mode = !limit ? UFS_PRUNE_OFF : can_prune ? UFS_PRUNE_NOTIFY : UFS_PRUNE_TIMEOUTS;
	if (p->mode != UFS_PRUNE_NOTIFY)
		return 0;
	if (pthread_condattr_init(&attr))
		return -ENOMEM;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&p->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (ret || pthread_mutex_init(&p->lock, NULL))
		return -ENOMEM;
	ret = -pthread_create(&p->thread, NULL, prune_main, p);
	if (ret)
		return ret;
	p->started = true;
	return 0;
}

void ufs_inode_prune_stop(struct ufs_inode_prune *p)
{
	if (!p->started)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	p->started = false;
}
