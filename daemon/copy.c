// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The copy room (copy.h): a copy's way from its handler to its reply.
 *
 *   ufs_copy_start
 *     -> registered (INTERRUPT can find it), mode chosen
 *     -> sync: chunks on the worker, reply
 *     -> ring, thread: queued in the worker's lane, waiting its turn
 *          -> ring: one SQE per chunk (lane_run_ring), each completion
 *             deciding the next (ring_chunk_done)
 *          -> thread: the lane's helper runs the chunks (lane_helper_main)
 *     -> copy_end: the reply; the lane's next copy takes its turn
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "copy.h"
#include "copy_lane.h"
#include "interrupt.h"
#include "lockdep.h"
#include "log.h"
#include "worker.h"

/*
 * A ring copy is always punted to io-wq, where the READs and WRITEs of
 * files without non-blocking I/O (tmpfs) go too.  With every client's copy
 * in flight at once they wait behind the copies (the probe benchmark saw
 * 100 ms), so a worker runs one copy at a time on its ring, as thread mode
 * runs one helper per worker; the others wait in its lane, where an
 * INTERRUPT takes them out with EINTR.
 *
 * A copy waiting its turn still holds its transport's memory for the
 * request: a ring entry, a /dev/fuse request slot.  So a lane keeps at most
 * COPY_LANE_MAX copies, and over io_uring a copy must get a hold on its
 * entry (xops->hold), which leaves every queue entries for the other
 * requests.  A copy refused either goes back to the kernel: EOPNOTSUPP
 * makes fuse_copy_file_range() copy by itself, through READ and WRITE
 * requests, which never wait long (fs/fuse/file.c, splice_copy_file_range).
 * Nothing then holds up the other requests of the mount, whatever the
 * number of copying processes, and the bytes are the same.
 */
#define COPY_LANE_MAX 256

enum copy_how {
	COPY_SYNC,		/* chunks on the worker */
	COPY_ON_RING,		/* chunks as SQEs on the worker's ring */
	COPY_ON_THREAD,		/* chunks on the lane's helper thread */
};

struct ufs_copy_job {
	struct ufs_copy_job *next;		/* the registry; protected by copies->lock */
	struct ufs_copies *copies;
	struct ufs_req *req;
	uint64_t unique;
	enum copy_how how;
	_Atomic bool cancel;			/* interrupted: stop at the next chunk */
	/* the copy as asked, and how far it got; the running side's */
	uint64_t off, off_in;
	size_t len, done;
	int error;				/* a chunk's error before any byte moved */
	void (*reply)(struct ufs_req *req, ssize_t res);	/* the handler's */
	struct ufs_copy_lane *lane;		/* ring and thread: the worker's; set first */
	struct ufs_copy_turn turn;		/* its place in the lane; lane->lock */
};

/* A worker's copies: one runs, the others wait in line. */
struct ufs_copy_lane {
	struct ufs_worker *w;			/* back pointer */
	pthread_mutex_t lock;			/* protects everything below */
	pthread_cond_t cond;			/* the helper waits for a copy */
	struct ufs_copy_line line;		/* the copies admitted, waiting, running */
	bool helper_started;			/* thread mode: helper is running */
	pthread_t helper;
	bool stop;				/* the helper leaves */
};

static struct ufs_copy_job *job_of(struct ufs_copy_turn *t)
{
	return t ? (struct ufs_copy_job *)((char *)t - offsetof(struct ufs_copy_job, turn)) : NULL;
}

void ufs_copies_init(struct ufs_copies *c, struct ufs_interrupts *early)
{
	*c = (struct ufs_copies){ .mode = UFS_CFR_THREAD, .early = early };
	pthread_mutex_init(&c->lock, NULL);
}

void ufs_copies_destroy(struct ufs_copies *c)
{
	pthread_mutex_destroy(&c->lock);
}

/* ---- the next chunk, and the end ---- */

/* Point req->io at the next chunk. */
static void chunk_prepare(struct ufs_copy_job *job)
{
	struct ufs_io *io = &job->req->io;
	size_t left = job->len - job->done;

	io->off = job->off + job->done;
	io->off_in = job->off_in + job->done;
	io->len = left < UFS_COPY_CHUNK ? left : UFS_COPY_CHUNK;
	io->done_bytes = 0;
}

/* A chunk copied res bytes or failed: true if another chunk follows. */
static bool chunk_progress(struct ufs_copy_job *job, ssize_t res)
{
	if (res > 0) {
		job->done += res;
		return job->done < job->len && !job->cancel;
	}
	/* -ECANCELED: an ASYNC_CANCEL caught a ring chunk before it ran. */
	if (res < 0 && res != -ECANCELED && res != -EINTR)
		job->error = (int)res;
	return false;
}

/* Out of the registry: INTERRUPT cannot find it any more. */
static void job_untrack(struct ufs_copy_job *job)
{
	struct ufs_copies *c = job->copies;

	pthread_mutex_lock(&c->lock);
	for (struct ufs_copy_job **pp = &c->jobs; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/*
 * The copy is over: out of its lane (if it is still in it) and the
 * registry, then the reply: the bytes copied, else the error, else EINTR
 * when it was interrupted before any byte moved.
 */
static void copy_end(struct ufs_copy_job *job)
{
	struct ufs_copies *c = job->copies;
	struct ufs_copy_lane *lane = job->lane;
	struct ufs_req *req = job->req;
	struct ufs_stats *st = req->worker ? &req->worker->stats : NULL;
	void (*reply)(struct ufs_req *, ssize_t) = job->reply;
	bool cancelled;
	ssize_t res;

	if (lane) {
		pthread_mutex_lock(&lane->lock);
		ufs_copy_line_end(&lane->line, &job->turn);
		pthread_mutex_unlock(&lane->lock);
	}
	job_untrack(job);
	cancelled = job->cancel;
	res = job->done ? (ssize_t)job->done : job->error;
	if (cancelled && res <= 0)
		res = -EINTR;
	if (st) {
		if (cancelled)
			ufs_stat_add(&st->cfr_cancelled, 1);
		if (res > 0)
			ufs_stat_add(&st->cfr_bytes, res);
	}
	req->copy = NULL;
	free(job);
	reply(req, res);
	/* Only now: until the reply is out, shutdown must not free the transport. */
	__atomic_fetch_sub(&c->active, 1, __ATOMIC_RELEASE);
}

/* Chunks with system calls, until done, an error or a cancel. */
static void copy_run_calls(struct ufs_copy_job *job)
{
	struct ufs_io *io = &job->req->io;
	struct ufs_ident_saved saved;
	int err = ufs_ident_enter(&io->who, 0, &saved);

	if (err) {
		chunk_progress(job, err);
		return;
	}
	do {
		loff_t in, out;
		ssize_t n;

		chunk_prepare(job);
		in = (loff_t)io->off_in;
		out = (loff_t)io->off;
		n = copy_file_range(io->fd_in, &in, io->fd, &out, io->len, io->mode);
		if (n < 0 && errno == EINTR && !job->cancel)
			continue;	/* a stray signal: the same chunk again */
		if (!chunk_progress(job, n < 0 ? -errno : n))
			break;
	} while (true);
	ufs_ident_leave(&saved);
}

/* ---- the lane: one copy at a time per worker ---- */

/* The lane's next copy, now running; interrupted ones end on the way. */
static struct ufs_copy_job *lane_take_turn(struct ufs_copy_lane *lane)
{
	struct ufs_copy_job *job;

	for (;;) {
		pthread_mutex_lock(&lane->lock);
		job = job_of(ufs_copy_line_next(&lane->line));
		pthread_mutex_unlock(&lane->lock);
		if (!job || !job->cancel)
			return job;
		copy_end(job);	/* interrupted while it waited: EINTR */
	}
}

static void lane_run_ring(struct ufs_copy_lane *lane);

/* A ring chunk completed (on the worker's thread): the next, or the end. */
static void ring_chunk_done(struct ufs_req *req, ssize_t res)
{
	struct ufs_copy_job *job = req->copy;
	struct ufs_copy_lane *lane = job->lane;

	if (chunk_progress(job, res)) {
		chunk_prepare(job);
		req->xops->io_submit(req);
		return;
	}
	copy_end(job);
	lane_run_ring(lane);
}

/* Ring lanes take turns on the worker's thread, which alone submits on its ring. */
static void lane_run_ring(struct ufs_copy_lane *lane)
{
	struct ufs_copy_job *job = lane_take_turn(lane);

	if (!job)
		return;
	chunk_prepare(job);
	job->req->io.done = ring_chunk_done;
	job->req->xops->io_submit(job->req);
}

static void *lane_helper_main(void *arg)
{
	struct ufs_copy_lane *lane = arg;
	char name[16];

	snprintf(name, sizeof(name), "uringfs-copy%u", lane->w->id);
	pthread_setname_np(pthread_self(), name);
	ufs_helper_thread_setup(lane->w);
	for (;;) {
		struct ufs_copy_job *job;

		pthread_mutex_lock(&lane->lock);
		while (!lane->line.head && !lane->stop)
			pthread_cond_wait(&lane->cond, &lane->lock);
		if (!lane->line.head) {
			pthread_mutex_unlock(&lane->lock);
			return NULL;
		}
		pthread_mutex_unlock(&lane->lock);
		job = lane_take_turn(lane);
		if (!job)
			continue;
		copy_run_calls(job);
		copy_end(job);
	}
}

/* The worker's lane, made on its first copy; NULL if it cannot be made. */
static struct ufs_copy_lane *lane_get(struct ufs_worker *w, bool helper)
{
	struct ufs_copy_lane *lane = w->copy_lane;

	if (!lane) {
		lane = calloc(1, sizeof(*lane));
		if (!lane)
			return NULL;
		lane->w = w;
		pthread_mutex_init(&lane->lock, NULL);
		pthread_cond_init(&lane->cond, NULL);
		w->copy_lane = lane;
	}
	/* Only the worker's own thread gets here: no race for the start. */
	if (helper && !lane->helper_started) {
		if (pthread_create(&lane->helper, NULL, lane_helper_main, lane))
			return NULL;
		lane->helper_started = true;
	}
	return lane;
}

void ufs_copy_lane_free(struct ufs_worker *w)
{
	struct ufs_copy_lane *lane = w->copy_lane;

	if (!lane)
		return;
	if (lane->helper_started) {
		pthread_mutex_lock(&lane->lock);
		lane->stop = true;
		pthread_cond_signal(&lane->cond);
		pthread_mutex_unlock(&lane->lock);
		pthread_join(lane->helper, NULL);
	}
	pthread_cond_destroy(&lane->cond);
	pthread_mutex_destroy(&lane->lock);
	free(lane);
	w->copy_lane = NULL;
}

/* ---- the way in ---- */

static void lane_unadmit(struct ufs_copy_lane *lane)
{
	pthread_mutex_lock(&lane->lock);
	ufs_copy_line_unadmit(&lane->line);
	pthread_mutex_unlock(&lane->lock);
}

/* Room in the lane, and a hold on the transport's entry: else the kernel copies. */
static bool lane_admit(struct ufs_copy_lane *lane, struct ufs_req *req)
{
	bool room;

	pthread_mutex_lock(&lane->lock);
	room = ufs_copy_line_admit(&lane->line, COPY_LANE_MAX);
	pthread_mutex_unlock(&lane->lock);
	if (!room) {
		ufs_log_once(UFS_LOG_INFO, "copy_file_range: %u copies wait on worker %u: the next "
			     "ones are copied by the kernel, through READ and WRITE", COPY_LANE_MAX,
			     lane->w->id);
		return false;
	}
	if (req->xops->hold && req->xops->hold(req)) {
		lane_unadmit(lane);
		return false;
	}
	return true;
}

/* How this request's copy runs: the ring only through a transport that can stop it. */
static enum copy_how copy_how_choose(const struct ufs_copies *c, const struct ufs_req *req)
{
	switch (c->mode) {
	case UFS_CFR_RING:
		return req->xops->io_cancel ? COPY_ON_RING : COPY_ON_THREAD;
	case UFS_CFR_SYNC:
		return COPY_SYNC;
	default:
		return COPY_ON_THREAD;
	}
}

/* Into the registry, where INTERRUPT finds it. */
static void job_track(struct ufs_copies *c, struct ufs_copy_job *job)
{
	pthread_mutex_lock(&c->lock);
	job->next = c->jobs;
	c->jobs = job;
	/*
	 * Interrupted on its way here: it copies nothing and ends with EINTR.
	 * Claimed once INTERRUPT can find it (see ufs_op_interrupt).
	 */
	job->cancel = ufs_interrupt_claim(c->early, job->unique);
	pthread_mutex_unlock(&c->lock);
}

static void count_start(struct ufs_req *req, enum copy_how how)
{
	struct ufs_stats *st = &req->worker->stats;

	ufs_stat_add(how == COPY_ON_RING ? &st->cfr_ring :
		     how == COPY_ON_THREAD ? &st->cfr_thread : &st->cfr_sync, 1);
}

void ufs_copy_start(struct ufs_copies *c, struct ufs_req *req)
{
	enum copy_how how = copy_how_choose(c, req);
	struct ufs_copy_lane *lane = NULL;
	struct ufs_copy_job *job;
	bool on_ring;

	ufs_debug_pause("copy_start");
	if (how != COPY_SYNC) {
		lane = lane_get(req->worker, how == COPY_ON_THREAD);
		if (!lane)
			how = COPY_SYNC;	/* no lane or helper could start */
	}
	if (lane && !lane_admit(lane, req)) {
		ufs_stat_add(&req->worker->stats.cfr_fallback, 1);
		req->io.done(req, -EOPNOTSUPP);
		return;
	}
	job = calloc(1, sizeof(*job));
	if (!job) {
		if (lane)
			lane_unadmit(lane);
		req->io.done(req, -ENOMEM);
		return;
	}
	*job = (struct ufs_copy_job){
		.copies = c,
		.req = req,
		.unique = req->in->unique,
		.how = how,
		.off = req->io.off,
		.off_in = req->io.off_in,
		.len = req->io.len,
		.reply = req->io.done,
		.lane = lane,
	};
	req->copy = job;
	count_start(req, how);
	__atomic_fetch_add(&c->active, 1, __ATOMIC_RELAXED);
	job_track(c, job);
	if (how == COPY_SYNC) {
		if (!job->cancel)
			copy_run_calls(job);
		copy_end(job);
		return;
	}
	/* Once queued the job is the lane's: a helper may end it before this returns. */
	on_ring = how == COPY_ON_RING;
	pthread_mutex_lock(&lane->lock);
	/*
	 * Interrupted before it got here (the INTERRUPT came first, or found it
	 * registered but not queued: ufs_copy_interrupt sets cancel under this
	 * lock): EINTR now, not after the copy running in the lane.
	 */
	if (job->cancel) {
		pthread_mutex_unlock(&lane->lock);
		copy_end(job);
		return;
	}
	ufs_copy_line_queue(&lane->line, &job->turn);
	if (!on_ring)
		pthread_cond_signal(&lane->cond);
	pthread_mutex_unlock(&lane->lock);
	if (on_ring)
		lane_run_ring(lane);
}

/* ---- the way out early ---- */

bool ufs_copy_interrupt(struct ufs_copies *c, uint64_t unique)
{
	struct ufs_copy_job *job;
	bool dequeued = false, found;

	pthread_mutex_lock(&c->lock);
	for (job = c->jobs; job && job->unique != unique; job = job->next)
		;
	found = job != NULL;
	if (job && job->lane) {
		struct ufs_copy_lane *lane = job->lane;

		job->cancel = true;
		pthread_mutex_lock(&lane->lock);
		dequeued = ufs_copy_line_dequeue(&lane->line, &job->turn);
		/*
		 * A running chunk is stopped where it runs; the registry's lock
		 * keeps the request alive meanwhile.  A UFS_COPY_NEW one ends when
		 * its turn comes.
		 */
		if (job->turn.state == UFS_COPY_RUNNING && job->how == COPY_ON_THREAD)
			pthread_kill(lane->helper, UFS_WORKER_WAKE_SIGNAL);
		else if (job->turn.state == UFS_COPY_RUNNING)
			job->req->xops->io_cancel(job->req);
		pthread_mutex_unlock(&lane->lock);
	} else if (job) {
		job->cancel = true;	/* sync: stops at its next chunk */
	}
	pthread_mutex_unlock(&c->lock);
	if (dequeued)
		copy_end(job);	/* never started: EINTR */
	return found;
}

void ufs_copy_interrupt_all(struct ufs_copies *c)
{
	uint64_t uniques[64];
	size_t n;

	do {
		n = 0;
		pthread_mutex_lock(&c->lock);
		for (struct ufs_copy_job *job = c->jobs; job && n < 64; job = job->next) {
			if (!job->cancel)
				uniques[n++] = job->unique;
		}
		pthread_mutex_unlock(&c->lock);
		for (size_t i = 0; i < n; i++)
			ufs_copy_interrupt(c, uniques[i]);
	} while (n == 64);
}

void ufs_copy_wait_idle(struct ufs_copies *c)
{
	while (__atomic_load_n(&c->active, __ATOMIC_ACQUIRE)) {
		ufs_copy_interrupt_all(c);
		usleep(1000);
	}
}
