/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The bound on the inode store (inode_limit): a thread that asks the kernel
 * to let go of the least recently used inodes it holds (FUSE_NOTIFY_PRUNE,
 * 7.45) while the store holds more than the bound, or, without PRUNE, has
 * replies carry no entry or attribute timeout meanwhile (inode_prune.c).
 */
#ifndef UFS_INODE_PRUNE_H
#define UFS_INODE_PRUNE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ufs_inode_store;

/* How the store is kept under the bound (the control file's inode_prune). */
enum ufs_prune_mode {
	UFS_PRUNE_OFF,			/* inode_limit 0: unbounded */
	UFS_PRUNE_NOTIFY,		/* FUSE_NOTIFY_PRUNE */
	UFS_PRUNE_TIMEOUTS,		/* no PRUNE: short timeouts while over the bound */
};

/*
 * The notification's body: struct fuse_notify_prune_out, then count node
 * ids.  Written by the daemon above (daemon_start.c), from the pruner's
 * thread only.  Returns 0 or -errno.
 */
typedef int (*ufs_prune_notify_fn)(void *arg, const void *body, size_t len);

struct ufs_inode_prune {
	/* set by ufs_inode_prune_start before the thread runs; read-only */
	struct ufs_inode_store *inodes;
	size_t limit;
	ufs_prune_notify_fn notify;
	void *arg;
	/* atomics: the thread writes, anyone reads */
	int mode;			/* enum ufs_prune_mode */
	uint64_t notifications;		/* PRUNE notifications written */
	uint64_t nodeids;		/* node ids they asked for */
	/* the thread's own */
	size_t hand;			/* the CLOCK hand: a bucket of the by-id table */
	pthread_t thread;
	bool started;
	/* lock guards stop; cond wakes the thread to stop */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
};

/*
 * Under inode_lock: the CLOCK's next victims.  The hand walks at most
 * nbuckets buckets of the by-id table from *hand: an inode the kernel holds
 * (nlookup) that nothing pins (refs), neither the root nor the control
 * file, is a victim if it was not used since the hand last passed it; a used
 * one loses its bit (a second chance).  Victims' node ids go to ids[], at
 * most max; a bucket that does not fit waits for the next turn.  Returns
 * how many; *hand moves past the buckets walked.
 */
size_t ufs_inode_prune_pick_locked(struct ufs_inode_store *inodes, size_t *hand, size_t nbuckets,
				   uint64_t *ids, size_t max);

/*
 * The bound: limit inodes (0: none), kept by the thread with PRUNE
 * (can_prune: the kernel takes it), by the replies' timeouts without (no
 * thread then).  Returns 0 or -errno.
 */
int ufs_inode_prune_start(struct ufs_inode_prune *p, struct ufs_inode_store *inodes, size_t limit,
			  bool can_prune, ufs_prune_notify_fn notify, void *arg);
void ufs_inode_prune_stop(struct ufs_inode_prune *p);
/* Replies carry no entry or attribute timeout now: UFS_PRUNE_TIMEOUTS, over the bound. */
bool ufs_inode_prune_short(const struct ufs_inode_prune *p);
const char *ufs_prune_mode_name(int mode);

#endif /* UFS_INODE_PRUNE_H */
