/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A worker: one thread serving requests from its transport (a cloned
 * /dev/fuse descriptor, or an io_uring with the entries of some queues).
 */
#ifndef UFS_WORKER_H
#define UFS_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include "stats.h"

#include <signal.h>

struct ufs_daemon;
struct ufs_copy_lane;

/* Sent to a worker to interrupt a blocking wait when the daemon stops. */
#define UFS_WORKER_WAKE_SIGNAL SIGUSR2

struct ufs_worker {
	unsigned int id;
	pthread_t thread;
	bool started;
	struct ufs_daemon *daemon;	/* back pointer */
	void *xpriv;			/* transport state of this worker */
	struct ufs_copy_lane *copy_lane; /* its copies (copy.c), or NULL before the first */
	struct ufs_stats stats;
	int cpu;			/* pinned CPU, -1: none */
};

/* Per-thread set-up every worker does first (names, fs context, pinning). */
int ufs_worker_thread_setup(struct ufs_worker *w, const char *role);

/*
 * What a copy helper does first: take all of the daemon's CPUs (not the
 * one of the pinned worker that started it) and run at UFS_HELPER_NICE,
 * below the workers (0).
 */
#define UFS_HELPER_NICE 10
void ufs_helper_thread_setup(const struct ufs_daemon *d);

#endif /* UFS_WORKER_H */
