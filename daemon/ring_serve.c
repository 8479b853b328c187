// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A ring worker's thread: set-up, then the loop that reaps completions and
 * serves the requests that arrive in its entries.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "dispatch.h"
#include "log.h"
#include "ring_ent.h"
#include "ring_guard.h"
#include "ring_io.h"
#include "ring_keep.h"
#include "ring_register.h"
#include "ring_reply.h"
#include "ring_serve.h"
#include "ring_setup.h"
#include "ring_sqe.h"
#include "worker.h"

static void ring_ent_serve(struct ring_worker *rw, struct ring_ent *ent);

/* Left for a successor, or for later: ent's request or the reply to it. */
static void ring_defer(struct ring_worker *rw, struct ring_ent *ent)
{
	ent->remote_next = rw->deferred;
	rw->deferred = ent;
}

static void ring_remote_drain(struct ring_worker *rw)
{
	bool paused = ufs_worker_pausing(rw->u->d);
	struct ring_cancel *cancels;
	struct ring_ent *ent, *adopt;

	pthread_mutex_lock(&rw->remote_lock);
	ent = rw->remote_head;
	rw->remote_head = NULL;
	cancels = rw->cancel_head;
	rw->cancel_head = NULL;
	adopt = rw->adopt_head;
	rw->adopt_head = NULL;
	pthread_mutex_unlock(&rw->remote_lock);
	ring_cancels_submit(rw, cancels);
	while (ent) {
		struct ring_ent *next = ent->remote_next;

		/*
		 * A long wait or a copy ended during a take-over: its entry
		 * stays as the record says (being served) for the successor,
		 * which serves it again; this reply goes out only on resume.
		 */
		if (paused && ent->state == RING_ENT_HELD)
			ring_defer(rw, ent);
		else if (!ring_zc_reply(rw, ent, ent->remote_error, ent->remote_len))
			ring_commit(rw, ent, ent->remote_error, ent->remote_len);
		ent = next;
	}
	/* A predecessor's requests (ring_keep.c): ours to answer now. */
	while (adopt) {
		struct ring_ent *next = adopt->remote_next;

		adopt->req.xops = &ufs_ring_ops;
		adopt->next_adopted = rw->adopted;
		rw->adopted = adopt;
		rw->live_ents++;
		if (adopt->ready)
			ring_commit_as_is(rw, adopt);
		else
			ring_ent_serve(rw, adopt);
		adopt = next;
	}
}

/* A request arrived in ent's buffers: check what the kernel says, then serve it. */
static void ring_ent_dispatch(struct ring_worker *rw, struct ring_ent *ent)
{
	struct ufs_uring *u = rw->u;
	struct ufs_uring_req_header *hdr = ent->hdr;
	const struct fuse_in_header *in = ufs_uring_req_in(hdr);
	const struct ufs_uring_ent_in_out *eio = &hdr->ring_ent_in_out;
	uint8_t *payload = ent->payload;
	struct ufs_msg msg;

	ring_ent_set(ent, RING_ENT_SERVING);
	/* Nothing of the entry's previous request may leak into an early commit. */
	ent->req.noreply = false;
	ent->req.zero_copy = false;
	ufs_stat_add(&rw->w->stats.requests_ring, 1);
	if (u->bufpool) {
		/* offset is only meaningful when a buffer was assigned; it never is out of range. */
		if ((size_t)eio->offset + u->max_payload > ent->q->pool_len) {
			ufs_log_once(UFS_LOG_ERR, "io_uring: pool offset %u out of range qid=%u",
				     eio->offset, ent->q->qid);
			ufs_stat_add(&rw->w->stats.bad_requests, 1);
			ring_commit(rw, ent, -EIO, 0);
			return;
		}
		payload = ent->q->pool + eio->offset;
	}
	if (eio->payload_sz > u->max_payload) {
		ufs_log_once(UFS_LOG_ERR, "io_uring: payload_sz %u exceeds %zu", eio->payload_sz,
			     u->max_payload);
		ufs_stat_add(&rw->w->stats.bad_requests, 1);
		ring_commit(rw, ent, -EIO, 0);
		return;
	}
	/* For a successor, should this daemon die before the reply is whole. */
	ring_rec_seen(ent, payload, eio->payload_sz);
	if (ent->req.replay)
		ufs_stat_add(&rw->w->stats.requests_replayed, 1);
	msg = (struct ufs_msg){
		.in = in,
		.op = (const uint8_t *)hdr->op_in,
		.op_len = sizeof(hdr->op_in),
		.rest = payload,
		.rest_len = eio->payload_sz,
	};
	ent->req.out = payload;
	ent->req.out_cap = u->max_payload;
	ent->req.direct_io_aligned = true;
	if (eio->flags & UFS_URING_ENT_ZERO_COPY) {
		/* A predecessor's slot: the client's pages were in its ring, gone with it. */
		if (ent->held_over) {
			ufs_log_once(UFS_LOG_WARN, "io_uring: a zero-copied request the old daemon "
				     "held is answered EIO: its pages went with its ring");
			ring_commit(rw, ent, -EIO, 0);
			return;
		}
		if (!ent->q->zero_copy) {
			ufs_log_once(UFS_LOG_ERR, "io_uring: zero-copy request on qid=%u, which is not",
				     ent->q->qid);
			ring_commit(rw, ent, -EIO, 0);
			return;
		}
		/*
		 * The client's pages are at the slot; a READ has no pool buffer,
		 * so its handler's bytes (if any) go to the bounce region.
		 */
		ent->req.zero_copy = true;
		if (in->opcode == FUSE_READ)
			ent->req.out = ring_ent_bounce(rw, ent);
	} else if (in->opcode == FUSE_READ) {
		ufs_stat_add(&rw->w->stats.copied_reads, 1);
	} else if (in->opcode == FUSE_WRITE) {
		ufs_stat_add(&rw->w->stats.copied_writes, 1);
	}
	ufs_dispatch(&u->d->fs, &ent->req, &msg);
}

/*
 * Serve ent; a RELEASE counted in its batch is no longer held once served
 * (worker.h: batch_releases).
 */
static void ring_ent_serve(struct ring_worker *rw, struct ring_ent *ent)
{
	bool counted = ent->release_counted;

	ent->release_counted = false;
	ring_ent_dispatch(rw, ent);
	if (counted)
		__atomic_sub_fetch(&rw->w->batch_releases, 1, __ATOMIC_RELEASE);
}

static void ring_ent_complete(struct ring_worker *rw, struct ring_ent *ent, int res)
{
	if (!res) {
		ent->req.replay = false;
		ent->held_over = false;
		/*
		 * During a take-over: untouched, for the successor (or served on
		 * resume).  Not a zero-copied READ or WRITE: the client's pages
		 * are in this ring's table, which goes with this daemon, and its
		 * data moves change nothing a successor restores.
		 */
		if (ufs_worker_pausing(rw->u->d) &&
		    !(ent->hdr->ring_ent_in_out.flags & UFS_URING_ENT_ZERO_COPY)) {
			ring_ent_set(ent, RING_ENT_DEFERRED);
			ring_defer(rw, ent);
			return;
		}
		ring_ent_serve(rw, ent);
		return;
	}
	/*
	 * -ENOTCONN: unmounted or aborted; -ECONNABORTED: aborted with an
	 * error; -ECANCELED: the ring is going away.  Anything else is a
	 * commit the kernel refused, and the entry is gone all the same.
	 */
	ring_ent_set(ent, RING_ENT_DEAD);
	rw->live_ents--;
	/*
	 * A predecessor's answered request that the kernel had taken after
	 * all (or ended, when its daemon died delivering it): nothing held.
	 */
	if (ent->adopted && res == -ENOENT)
		return;
	/*
	 * Anything else means the kernel refused a commit (-EOPNOTSUPP after a
	 * failed REGISTER, -EINVAL, -ENOENT, -EIO): the entry is gone and its
	 * queue shrinks for good.  A queue without entries wedges every
	 * process on its CPU, so the connection must end.
	 */
	if (res != -ENOTCONN && res != -ECONNABORTED && res != -ECANCELED) {
		ufs_err("io_uring: qid=%u: the kernel refused a command: %s", ent->q->qid,
			strerror(-res));
		ufs_daemon_fatal(rw->u->d, res);
	}
}

static void ring_cqe_handle(struct ring_worker *rw, struct io_uring_cqe *cqe)
{
	uintptr_t data = (uintptr_t)io_uring_cqe_get_data(cqe);
	void *p = (void *)(data & ~RING_TAG_MASK);

	switch ((enum ring_tag)(data & RING_TAG_MASK)) {
	case RING_TAG_ENT:
		ring_ent_complete(rw, p, cqe->res);
		break;
	case RING_TAG_IO:
		ring_io_complete(rw, p, cqe->res);
		break;
	case RING_TAG_EVENT:
		ring_remote_drain(rw);
		/* Re-armed whatever the result: replies from other threads depend on it. */
		if (!__atomic_load_n(&rw->u->d->stopping, __ATOMIC_ACQUIRE))
			ring_event_arm(rw);
		break;
	case RING_TAG_SLOT:
		ring_zc_slot_done(rw, p, cqe->res);
		break;
	case RING_TAG_GUARD:
		ring_exit_guard_done(rw, cqe->res);
		break;
	case RING_TAG_SETUP:
		break;
	}
}

static bool ring_worker_done(struct ring_worker *rw)
{
	if (__atomic_load_n(&rw->u->d->stopping, __ATOMIC_ACQUIRE))
		return true;
	return !rw->live_ents && !rw->ios_inflight;
}

/* Nothing in flight that a take-over must wait for: short requests all answered. */
static bool ring_quiet(const struct ring_worker *rw)
{
	for (unsigned int i = 0; i < rw->nqueues; i++) {
		for (unsigned int e = 0; e < rw->queues[i].nents; e++) {
			enum ring_ent_state s = rw->queues[i].ents[e].state;

			if (s == RING_ENT_SERVING || s == RING_ENT_IN_SLOT ||
			    s == RING_ENT_BOUNCE_IN || s == RING_ENT_SLOT_FILL)
				return false;
		}
	}
	for (const struct ring_ent *ent = rw->adopted; ent; ent = ent->next_adopted) {
		if (ent->state == RING_ENT_SERVING)
			return false;
	}
	return true;
}

/*
 * A take-over (handover_socket.c) pauses the worker: it keeps reaping, so that
 * the kernel puts requests in its entries rather than cancel them, but
 * serves nothing new, and counts itself parked once what it was serving is
 * answered.  Resumed, it serves what came meanwhile; handed over, it lets
 * the kernel's pending deliveries land once more and leaves the ring to
 * the process's exit: the successor answers what its entries hold.
 */
static void ring_pause_check(struct ring_worker *rw)
{
	enum ufs_serve_state state = __atomic_load_n(&rw->u->d->pause.state, __ATOMIC_ACQUIRE);

	if (state == UFS_SERVING) {
		if (rw->parked) {
			rw->parked = false;
			ufs_worker_set_parked(rw->w, false);
		}
		while (rw->deferred) {
			struct ring_ent *ent = rw->deferred;

			rw->deferred = ent->remote_next;
			if (ent->state == RING_ENT_HELD)
				ring_commit(rw, ent, ent->remote_error, ent->remote_len);
			else
				ring_ent_serve(rw, ent);
		}
		return;
	}
	if (state == UFS_SERVE_PAUSED) {
		if (!rw->parked && ring_quiet(rw)) {
			rw->parked = true;
			ufs_worker_set_parked(rw->w, true);
		}
		return;
	}
	if (io_uring_submit(&rw->ring) >= 0)	/* commits answered before the pause */
		ring_rec_sent(rw);
	/*
	 * Deliveries still in task work land now; then the thread exits, and
	 * its exit cancels the entries the kernel holds idle there and then
	 * (its exit guard, ring_guard.c), so no later request is given to
	 * them, only to be cancelled with ECANCELED.  Closing the ring instead
	 * frees them later, from a workqueue (io_ring_exit_work).
	 * The ring and its memory stay: the successor answers what the
	 * entries hold.
	 */
	io_uring_get_events(&rw->ring);
	ufs_worker_left(rw->w);
	ufs_worker_gone(rw->w);
	pthread_exit(NULL);
}

/*
 * A wait runs at most 20 of the deliveries queued for this thread
 * (io_uring: IO_LOCAL_TW_DEFAULT_MAX) and leaves the rest flagged: run
 * them, so that a batch holds every request delivered before the wait.
 * New ones can come as these run (an I/O completion, another thread's
 * reply), so a few rounds at most; true if none is left.
 */
#define RING_TAKE_ROUNDS 8

static bool ring_take_pending(struct ring_worker *rw)
{
	if (!rw->taskrun_flag)
		return true;
	for (unsigned int i = 0; i < RING_TAKE_ROUNDS; i++) {
		unsigned int tail = io_uring_smp_load_acquire(rw->ring.cq.ktail);

		if (!(IO_URING_READ_ONCE(*rw->ring.sq.kflags) & IORING_SQ_TASKRUN))
			return true;
		if (io_uring_get_events(&rw->ring) < 0)
			return false;
		/* The flag can outlast what it flagged (6.18, one worker on two queues). */
		if (io_uring_smp_load_acquire(rw->ring.cq.ktail) == tail)
			return true;
	}
	return false;
}

/* The entry a RELEASE was delivered to, or NULL. */
static struct ring_ent *ring_cqe_release(const struct io_uring_cqe *cqe)
{
	uintptr_t data = (uintptr_t)io_uring_cqe_get_data(cqe);
	struct ring_ent *ent = (void *)(data & ~RING_TAG_MASK);

	if ((data & RING_TAG_MASK) != RING_TAG_ENT || cqe->res ||
	    ufs_uring_req_in(ent->hdr)->opcode != FUSE_RELEASE)
		return NULL;
	return ent;
}

/*
 * The completions up to end are this batch: count its RELEASEs before
 * saying it serves (worker.h: ufs_worker_serving), so that an UNLINK
 * served by another worker knows whether to wait for it.  A batch that
 * may lack some delivery made before it counts one more, which goes when
 * it is served (ring_serve): no UNLINK takes it for proof.
 */
static void ring_count_releases(struct ring_worker *rw, unsigned int end, bool unsure)
{
	uint64_t bits = unsure ? ~0ull : 0;
	unsigned int head, n = unsure;
	struct io_uring_cqe *cqe;

	io_uring_for_each_cqe(&rw->ring, head, cqe) {
		struct ring_ent *ent;

		if (head == end)
			break;
		ent = ring_cqe_release(cqe);
		if (ent) {
			ent->release_counted = true;
			bits |= ufs_release_bit(ufs_uring_req_in(ent->hdr)->nodeid);
			n++;
		}
	}
	ufs_worker_releases_fresh(rw->w);
	ufs_worker_hold_releases(rw->w, n, bits);
}

static int ring_serve(struct ring_worker *rw)
{
	while (!ring_worker_done(rw)) {
		struct io_uring_cqe *cqe;
		unsigned int head, end, seen = 0, unsure;
		int ret;

		/* Holding no request: an UNLINK need not wait for it (worker.h). */
		ufs_worker_waiting(rw->w);
		ret = io_uring_submit_and_wait(&rw->ring, 1);
		unsure = !ring_take_pending(rw);
		end = io_uring_smp_load_acquire(rw->ring.cq.ktail);
		ring_count_releases(rw, end, unsure);
		ufs_worker_serving(rw->w, 0);
		if (ret >= 0)
			ring_rec_sent(rw);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			ufs_err("worker %u: io_uring_enter: %s", rw->w->id, strerror(-ret));
			ufs_daemon_fatal(rw->u->d, ret);
			return ret;
		}
		/* Completions a submit adds meanwhile are the next batch's. */
		io_uring_for_each_cqe(&rw->ring, head, cqe) {
			if (head == end)
				break;
			ring_cqe_handle(rw, cqe);
			seen++;
		}
		io_uring_cq_advance(&rw->ring, seen);
		if (unsure)
			__atomic_sub_fetch(&rw->w->batch_releases, 1, __ATOMIC_RELEASE);
		ring_pause_check(rw);
	}
	/* Told to stop: commit what other threads answered, then let the ring go. */
	ring_remote_drain(rw);
	io_uring_submit(&rw->ring);
	return 0;
}

/*
 * Requests land on the queue of the CPU their task runs on (CPUs numbered
 * past the queues go to queue 0), and COMMIT copies the reply into the
 * client's pages on the committing thread: a worker running on its queues'
 * own CPUs keeps both on one CPU and lets the scheduler spread the load by
 * moving the clients, not the workers.  Unpinned, two busy queues can end
 * up served from one CPU while another idles.
 */
static void ring_worker_pin_queues(struct ring_worker *rw)
{
	const cpu_set_t *allowed = &rw->u->d->cpus;
	cpu_set_t set;

	CPU_ZERO(&rw->cpus);
	if (rw->w->cpu >= 0)
		CPU_SET(rw->w->cpu, &rw->cpus);	/* cpus= pinned it already */
	if (rw->w->cpu >= 0 || !rw->u->d->cfg.pin_queues)
		return;
	CPU_ZERO(&set);
	for (unsigned int i = 0; i < rw->nqueues; i++) {
		unsigned int qid = rw->queues[i].qid;

		if (qid < CPU_SETSIZE && CPU_ISSET(qid, allowed))
			CPU_SET(qid, &set);
		for (unsigned int cpu = rw->u->nr_queues; !qid && cpu < CPU_SETSIZE; cpu++) {
			if (CPU_ISSET(cpu, allowed))
				CPU_SET(cpu, &set);
		}
	}
	if (!CPU_COUNT(&set)) {
		/* Queues of CPUs this process may not use (offline, or outside its mask). */
		ufs_dbg("worker %u: its queues' CPUs are not ours: not pinned", rw->w->id);
		return;
	}
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
		ufs_warn("worker %u: cannot pin to its queues' CPUs", rw->w->id);
	else
		rw->cpus = set;
}

void *ring_worker_main(void *arg)
{
	struct ring_worker *rw = arg;
	struct ufs_uring *u = rw->u;
	enum uring_setup_phase phase = SETUP_BUILDING;
	int ret;

	rw->thread = pthread_self();
	ufs_worker_waiting(rw->w);	/* no request before it serves */
	ufs_worker_thread_setup(rw->w, "ring");
	ring_worker_pin_queues(rw);
	ret = ring_build(rw);
	uring_setup_report(u, ret);
	for (;;) {
		phase = uring_setup_wait_phase(u, phase);
		if (phase == SETUP_SERVE)
			break;
		if (phase == SETUP_ABANDON)
			goto out_quiet;
		uring_setup_report(u, ring_register_phase(rw, phase));
	}
	ret = ring_serve(rw);
	ufs_worker_left(rw->w);
	ufs_daemon_worker_exited(u->d, ret);
	return NULL;

out_quiet:
	ufs_worker_left(rw->w);
	/* Set-up did not complete: ufs_uring_start() reports it, not the main loop. */
	__atomic_fetch_sub(&u->d->workers_running, 1, __ATOMIC_RELEASE);
	return NULL;
}
