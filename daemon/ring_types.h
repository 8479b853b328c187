/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The io_uring transport's types, shared by its files: entries, queues,
 * workers, struct ufs_uring, the entry states and user_data's tags, with
 * their inline helpers; no functions (each file declares its own in its
 * header: ring_X.c in ring_X.h).  The files, in the order they call each
 * other (each only those below it): uring.c (start), ring_serve.c (a
 * worker's thread), ring_register.c, ring_guard.c, ring_setup.c,
 * ring_reply.c, ring_io.c, ring_teardown.c, ring_keep.c, ring_sqe.c,
 * ring_ent.c.
 */
#ifndef UFS_RING_TYPES_H
#define UFS_RING_TYPES_H

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "daemon.h"
#include "fuse_abi.h"
#include "req.h"

/*
 * Entries a queue has beyond queue_depth, for requests that wait long (lock
 * waits): registered at start-up with the others, since a REGISTER on a
 * ready ring that failed would wedge the connection.
 */
#define RING_RESERVE 2

/*
 * Entries of a queue that requests waiting long (lock waits, copies) may
 * never take, so that every other request of that CPU finds one at once
 * (ring_hold): an eighth of queue_depth, at least one.
 */
static inline unsigned int ring_free_reserve(unsigned int depth)
{
	return depth / 8 ? depth / 8 : 1;
}

/* user_data: a pointer (8-byte aligned) with what it points to in the low bits. */
enum ring_tag {
	RING_TAG_ENT = 0,	/* struct ring_ent: a FUSE command completed */
	RING_TAG_IO = 1,	/* struct ufs_req: its backing-file I/O completed */
	RING_TAG_EVENT = 2,	/* struct ring_worker: replies from other threads */
	RING_TAG_SETUP = 3,	/* ADD_QUEUE, ADD_BUFPOOL, ASYNC_CANCEL: nothing to do */
	RING_TAG_SLOT = 4,	/* struct ring_ent: its reply reached the zero-copy slot */
	RING_TAG_GUARD = 5,	/* struct ring_worker: its exit guard ended (ring_exit_guard_arm) */
};
#define RING_TAG_MASK 7UL

/*
 * Where an entry is in its life (ring_ent.c has the transitions).  The
 * zero-copy states say where a READ's or WRITE's bytes are, which decides
 * the next SQE and whether the commit may go out yet.
 */
enum ring_ent_state {
	RING_ENT_NEW,		/* not registered yet */
	RING_ENT_KERNEL,	/* registered or committed: the kernel holds it */
	RING_ENT_SERVING,	/* carries a request the daemon is serving */
	RING_ENT_HELD,		/* serving a long wait, counted in its queue's holds */
	RING_ENT_IN_SLOT,	/* zero-copied READ: the backing file is read into the slot */
	RING_ENT_BOUNCE_IN,	/* bounced WRITE: the slot is copied to the bounce region */
	RING_ENT_SLOT_FILL,	/* bounced READ: the bounce region is copied to the slot */
	RING_ENT_DEFERRED,	/* a request arrived while a take-over pauses the worker */
	RING_ENT_ADOPTED,	/* a predecessor's, holding a request: ours from its commit */
	RING_ENT_DEAD,		/* the kernel completed it with an error: gone */
	RING_ENT_NR_STATES,
};

struct ring_worker;
struct ring_queue;

struct ring_ent_rec;		/* ring_keep.h */
struct ring_old;		/* ring_keep.h */

/*
 * Who owns what: q, rec, hdr, payload, iov and idx are set before the
 * entry's first REGISTER (ring_build on the worker thread) or, for an
 * adopted entry, before uring_adopt (main thread) passes it to the worker
 * through adopt_head under rw->remote_lock, with slot, ready, adopted and
 * held_over; read-only after, but for what the comments say.  req is the
 * handler's while the entry is SERVING or HELD (on whatever thread serves
 * it: a helper, a long wait), the worker thread's otherwise.
 */
struct ring_ent {
	struct ufs_req req;			/* the request this entry carries */
	struct ring_queue *q;			/* back pointer */
	struct ring_ent_rec *rec;		/* its record (ring_keep.c) */
	struct ufs_uring_req_header *hdr;	/* the kernel keeps this address */
	void *payload;				/* per-entry mode only */
	struct iovec iov[2];
	enum ring_ent_state state;		/* owned by the worker thread; ring_ent_set() */
	unsigned int idx;			/* index in the worker: slot and bounce region */
	bool ready;				/* adopted: its reply is in the buffers already */
	bool adopted;				/* a predecessor's: its commit may find nothing */
	bool held_over;				/* adopted: its request came to the predecessor */
	bool release_counted;			/* a RELEASE in w->batch_releases (ring_serve.c) */
	struct ring_ent *next_adopted;		/* rw->adopted, for freeing; the worker thread's */
	/* zero copy (7.3) */
	uint16_t slot;				/* registered-buffer slot, 0: none; set at REGISTER */
	size_t zc_len;				/* RING_ENT_SLOT_FILL: the reply's length; the worker's */
	/* a reply handed over by another thread; protected by rw->remote_lock */
	struct ring_ent *remote_next;
	int remote_error;
	size_t remote_len;
};

/*
 * A worker's share of one kernel queue.  With more workers than queues,
 * several workers serve one queue, each with some of its entries; the first
 * (the owner) adds the queue and its buffer pool, the others use both.
 *
 * The main thread sets it up before the workers start (uring_assign_queues),
 * but pool, pool_len and zero_copy: the owner's worker thread sets them in
 * ring_build, and the main thread copies them to the other shares
 * (uring_share_queues) once every worker has reported (u->lock orders it).
 * Read-only from the first REGISTER on, but for held.
 */
struct ring_queue {
	uint16_t qid;				/* = the kernel's CPU number */
	struct ring_worker *rw;			/* back pointer */
	bool owner;				/* adds the queue and owns the pool */
	uint8_t *pool;				/* buffer pool (bufpool mode) */
	size_t pool_len;
	unsigned int nents;			/* this worker's entries of the queue */
	struct ring_ent *ents;
	bool zero_copy;				/* added with FUSE_URING_ZERO_COPY */
	struct ring_queue *owner_q;		/* the owner's share, which counts holds */
	unsigned int total_ents;		/* the queue's entries over all shares */
	unsigned int hold_max;			/* of them, what long waits and copies may hold */
	int held;				/* owner only: entries held by them; atomic, any thread */
};

/* Writer identities a worker keeps registered with its ring (ring_io.c). */
#define RING_PERSONAS 16

/*
 * One ring worker.  Set by the main thread before the thread starts (w, u,
 * fuse_fd, queues, nqueues, remote_lock); built by the worker thread before
 * it reports SETUP_BUILDING done (ring, cpus, the memory file, the zero-copy
 * table; the handshake under u->lock publishes them) and read-only after,
 * but for the groups below that say otherwise.  Other threads write to
 * event_fd to wake it (ring_reply, ring_io_cancel, ufs_uring_force_stop);
 * the main thread reads mem_fd (ufs_uring_mem_fds) and frees it all once
 * the thread has been joined (ring_teardown.c).
 */
struct ring_worker {
	struct ufs_worker *w;			/* back pointer */
	struct ufs_uring *u;			/* back pointer */
	/*
	 * The one thread that submits on ring, set first thing in
	 * ring_worker_main: before its entries are registered, so before any
	 * request of this ring reaches another thread, which may read it
	 * without a lock (ring_reply).
	 */
	pthread_t thread;
	struct io_uring ring;
	bool ring_ok;
	bool taskrun_flag;			/* IORING_SQ_TASKRUN tells of deliveries to run */
	cpu_set_t cpus;				/* where it is pinned; empty: not pinned */
	int fuse_fd;				/* this worker's descriptor of the connection */
	struct ring_queue *queues;
	unsigned int nqueues;
	/* Headers, payloads, pools and records: one memory file (ring_keep.c). */
	int mem_fd;
	uint8_t *mem;
	size_t mem_len;
	struct ufs_uring_req_header *headers;
	uint8_t *payloads;			/* per-entry mode */
	struct ring_ent_rec *recs;
	/*
	 * Zero copy: a sparse registered-buffer table with a slot per entry,
	 * and a memory file, mapped once, where O_DIRECT and descriptorless
	 * data bounce (a region of one payload buffer per entry).
	 */
	unsigned int nslots;
	unsigned int next_idx;			/* the next entry index to give out */
	int bounce_fd;
	uint8_t *bounce;
	size_t bounce_len;
	/* fields below are owned by the worker thread */
	unsigned int live_ents;			/* entries the kernel may still complete */
	unsigned int ios_inflight;
	struct io_uring_sqe *last_sqe;		/* the one ring_get_sqe() gave out last */
	/* io_uring personalities: writers' identities, least recently used evicted */
	struct ring_persona {
		struct ufs_ident who;
		uint64_t used;			/* persona_clock at its last use; 0: free */
		uint16_t id;
	} personas[RING_PERSONAS];
	uint64_t persona_clock;
	int event_fd;				/* other threads' replies wake the ring */
	uint64_t event_value;
	uint32_t exit_guard;			/* the futex word the exit guard waits on */
	bool exit_guard_warned;
	/* replies and copy cancels from other threads; protected by remote_lock */
	pthread_mutex_t remote_lock;
	struct ring_ent *remote_head;
	struct ring_cancel *cancel_head;
	struct ring_ent *adopt_head;		/* a predecessor's entries to serve */
	/* a take-over (owned by the worker thread) */
	bool parked;				/* counted in the daemon's pause */
	struct ring_ent *deferred;		/* arrived while paused, via remote_next */
	struct ring_ent *adopted;		/* every entry adopted, via next_adopted */
	/* commits queued since the last submit: their records say SENT after it (the worker's) */
	struct ring_ent **unsent;
	unsigned int nunsent, unsent_cap;
};

/*
 * An INTERRUPT for a copy's chunk on this ring, passed to its worker
 * (ring_io_cancel): on rw->cancel_head under remote_lock until the worker
 * thread takes it (ring_remote_drain) and frees it.
 */
struct ring_cancel {
	struct ring_cancel *next;
	struct ufs_req *req;
	uint64_t unique;
};

/*
 * The start-up handshake between ufs_uring_start() and the workers.  The
 * ring becomes ready when the last queue gets its first entry; a REGISTER
 * failing before that only sends the connection back to /dev/fuse, one
 * failing after it wedges the connection (kernel-fuse-uring.md 1.3).  So
 * the key queue (qid 0) is registered last, one entry first.
 */
enum uring_setup_phase {
	SETUP_BUILDING,		/* workers build rings, buffers, queues */
	SETUP_REGISTER_MOST,	/* register every entry but the key queue's */
	SETUP_REGISTER_KEY,	/* register one entry of the key queue: the ring is ready */
	SETUP_REGISTER_REST,	/* register the key queue's other entries, on a ready ring */
	SETUP_SERVE,		/* every entry registered: serve */
	SETUP_ABANDON,		/* someone failed: stop */
};

/*
 * The transport, d->uring.  The main thread fills it in ufs_uring_start
 * before the workers start and frees it after joining them; read-only
 * between, but for the handshake and zc_refused (lock), and old and nold,
 * the main thread's (start, adoption, the hand-over's descriptors).
 */
struct ufs_uring {
	struct ufs_daemon *d;
	/* a successor's: the connection's queues exist, with the predecessor's memory */
	bool inherited;
	struct ring_old *old;
	unsigned int nold;
	unsigned int nr_queues;			/* possible CPUs */
	unsigned int depth;			/* entries per queue */
	unsigned int pool_bufs;			/* buffers per pool */
	size_t max_payload;
	bool bufpool;
	bool zc_wanted;				/* try FUSE_URING_ZERO_COPY */
	int zc_refused;				/* -EPERM or -EINVAL from ADD_QUEUE; protected by lock */
	struct ring_worker *rws;
	unsigned int nrws;
	/* the setup handshake; protected by lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	enum uring_setup_phase phase;
	unsigned int reported;			/* workers done with the current phase */
	int error;
};

static inline void *ring_tag(void *p, enum ring_tag t)
{
	return (void *)((uintptr_t)p | t);
}

static inline struct ring_ent *ring_req_to_ent(struct ufs_req *req)
{
	return (struct ring_ent *)((char *)req - offsetof(struct ring_ent, req));
}

static inline uint8_t *ring_ent_bounce(struct ring_worker *rw, const struct ring_ent *ent)
{
	return rw->bounce + (size_t)ent->idx * rw->u->max_payload;
}

/*
 * A FUSE command's error saying the connection ended (unmounted: ENOTCONN,
 * aborted: ECONNABORTED): at start-up not logged, ufs_uring_start says so.
 */
static inline bool ring_conn_ended(int err)
{
	return err == -ENOTCONN || err == -ECONNABORTED;
}

#endif /* UFS_RING_TYPES_H */
