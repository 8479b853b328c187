/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A worker: one thread serving requests from its transport (a cloned
 * /dev/fuse descriptor, or an io_uring with the entries of some queues).
 */
#ifndef UFS_WORKER_H
#define UFS_WORKER_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "counters.h"
#include "inflight_state.h"

struct ufs_daemon;
struct ufs_copy_lane;

/*
 * Whether the workers serve.  A take-over pauses them between requests;
 * it ends in HANDED_OVER (they stop quietly: the successor serves) or back
 * in SERVING.  Transitions: ufs_serve_state_set().
 */
enum ufs_serve_state {
	UFS_SERVING,
	UFS_SERVE_PAUSED,
	UFS_SERVE_HANDED_OVER,
};

/* d->pause: one per daemon, every worker points at it. */
struct ufs_pause {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* state changed, or a worker parked */
	enum ufs_serve_state state;	/* written under lock; read atomically */
	unsigned int parked;		/* workers stopped between requests */
	unsigned int gone;		/* workers that left after the hand-over */
};

/*
 * Where a worker is between its transport and its requests, for
 * ufs_workers_await: set by the worker only (atomic).
 */
enum ufs_worker_phase {
	UFS_WORKER_SERVING,	/* what it read, or reaped */
	UFS_WORKER_WAITING,	/* for more: asleep in read(2) or io_uring_enter(2), or just given some */
};

/* Sent to a worker to interrupt a blocking wait when the daemon stops. */
#define UFS_WORKER_WAKE_SIGNAL SIGUSR2

struct ufs_worker {
	unsigned int id;
	pthread_t thread;
	bool started;
	struct ufs_daemon *daemon;	/* back pointer */
	struct ufs_pause *pause;	/* &daemon->pause */
	const cpu_set_t *cpus;		/* &daemon->cpus: where its helpers run */
	void *xpriv;			/* transport state of this worker */
	struct ufs_copy_lane *copy_lane; /* its copies (copy.c), or NULL before the first */
	struct ufs_stats stats;
	struct ufs_inflight inflight;	/* its requests in flight (inflight.h: no lock) */
	int cpu;			/* pinned CPU, -1: none */
	bool batched;			/* a ring's: one wait gives it many requests; set before it starts */
	/* written by its own thread, read by others (atomic) */
	pid_t tid;			/* its thread, for /proc; 0: none, or gone */
	enum ufs_worker_phase phase;
	uint64_t waits;			/* times it went back to waiting */
	uint64_t releasing;		/* the node id of the RELEASE it serves, or 0 */
	unsigned int batch_releases;	/* a batched one's: RELEASEs it reaped, not yet served */
	uint64_t releases_of;		/* and their node ids' ufs_release_bit()s, set before */
	bool awaiting;			/* in ufs_workers_await itself */
};

/* A node id's bit in w->releases_of: a RELEASE of it may be held where it is set. */
static inline uint64_t ufs_release_bit(uint64_t nodeid)
{
	return 1ull << ((nodeid * 0x9e3779b97f4a7c15ull) >> 58);
}

/*
 * A batched worker holds n more RELEASEs, of the node ids in bits
 * (ufs_release_bit; all ones: any).  Its own thread before it serves them,
 * or another adopting a predecessor's requests for it: the bits again
 * after the count, in case the worker cleared them in between.
 */
static inline void ufs_worker_hold_releases(struct ufs_worker *w, unsigned int n, uint64_t bits)
{
	if (!n)
		return;
	__atomic_or_fetch(&w->releases_of, bits, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&w->batch_releases, n, __ATOMIC_SEQ_CST);
	__atomic_or_fetch(&w->releases_of, bits, __ATOMIC_SEQ_CST);
}

/* Its own thread, before a batch: the bits go once no RELEASE is held. */
static inline void ufs_worker_releases_fresh(struct ufs_worker *w)
{
	if (__atomic_load_n(&w->batch_releases, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&w->releases_of, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&w->batch_releases, __ATOMIC_SEQ_CST))
		__atomic_or_fetch(&w->releases_of, ~0ull, __ATOMIC_SEQ_CST);
}

/*
 * Before a worker waits for more requests (it holds none, but a batched
 * one's batch_releases).  The phase first: whoever sees the counter move
 * sees the worker past its batch.
 */
static inline void ufs_worker_waiting(struct ufs_worker *w)
{
	__atomic_store_n(&w->phase, UFS_WORKER_WAITING, __ATOMIC_RELEASE);
	/* seq_cst with the caller's reading of it: then its wait sees what came before */
	__atomic_add_fetch(&w->waits, 1, __ATOMIC_SEQ_CST);
}

/*
 * It read one: a RELEASE of node id release_of, or (0) another request.  A
 * batched worker says 0, having added the RELEASEs of its batch to
 * batch_releases first.
 */
static inline void ufs_worker_serving(struct ufs_worker *w, uint64_t release_of)
{
	__atomic_store_n(&w->releasing, release_of, __ATOMIC_RELAXED);
	__atomic_store_n(&w->phase, UFS_WORKER_SERVING, __ATOMIC_RELEASE);
}

/* It leaves for good, holding nothing. */
static inline void ufs_worker_left(struct ufs_worker *w)
{
	ufs_worker_waiting(w);
	__atomic_store_n(&w->tid, 0, __ATOMIC_RELEASE);
}

/*
 * Wait until none of the n workers, the calling thread's excepted, holds a
 * RELEASE of nodeid that it was given before the call, or until
 * enough(arg), or until deadline (CLOCK_MONOTONIC, ns).  False if the
 * deadline came first.  A worker asleep waiting holds none, nor a
 * /dev/fuse worker serving another request (one read, one request), nor
 * a batched one serving a batch it reaped after the call began with no
 * RELEASE left in it; one just given requests, not yet saying which, is
 * waited for.  A worker in this wait itself is not waited for: two would
 * wait for each other.  For an UNLINK that must not be answered before a
 * RELEASE the kernel queued ahead of it (fs_entry.c: release_held).
 */
bool ufs_workers_await(struct ufs_worker *workers, unsigned int n, uint64_t nodeid,
		       bool (*enough)(void *), void *arg, uint64_t deadline);
uint64_t ufs_monotonic_ns(void);
/* A thread of this process's state letter in /proc ('R', 'S', 'D' ...), '?' if unreadable. */
char ufs_thread_state(pid_t tid);

/* Per-thread set-up every worker does first (names, fs context, pinning). */
int ufs_worker_thread_setup(struct ufs_worker *w, const char *role);

/*
 * What a copy helper does first: take all of the daemon's CPUs (not the
 * one of the pinned worker that started it) and run at UFS_HELPER_NICE,
 * below the workers (0).
 */
#define UFS_HELPER_NICE 10
void ufs_helper_thread_setup(const struct ufs_worker *w);

/* ---- pausing for a take-over ---- */

/* Between two requests: true when the mount was handed over (stop quietly). */
bool ufs_worker_pause_point(struct ufs_worker *w);
/* A worker that cannot wait in ufs_worker_pause_point (a ring's keeps reaping). */
void ufs_worker_set_parked(struct ufs_worker *w, bool parked);
void ufs_worker_gone(struct ufs_worker *w);
void ufs_pause_init(struct ufs_pause *p);
/* Checked transitions; returns false (and changes nothing) for a forbidden one. */
bool ufs_serve_state_set(struct ufs_pause *p, enum ufs_serve_state to);
/*
 * Wait until want workers are parked (gone: have left), or timeout_ms;
 * nudge() wakes them meanwhile.
 */
int ufs_pause_wait(struct ufs_pause *p, bool gone, unsigned int want, int timeout_ms,
		   void (*nudge)(void *), void *arg);

#endif /* UFS_WORKER_H */
