// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE-over-io_uring transport.
 *
 * The kernel has one queue per possible CPU and puts a request on the queue
 * of the CPU its caller runs on.  uringfs spreads those queues over W
 * workers; each worker owns one io_uring (128-byte SQEs, as every FUSE
 * command needs) and the entries of its queues.  An entry is a command the
 * kernel holds until it has a request for it: REGISTER first, then
 * COMMIT_AND_FETCH, which answers one request and waits for the next.  The
 * backing-file I/O of READ, WRITE, FSYNC and FALLOCATE goes on the same
 * ring, so one slow request never holds up the others of a worker.
 *
 * Kernels with FUSE_HAS_IO_URING_BUFPOOL (7.3) get ADD_QUEUE and a buffer
 * pool per queue; older ones (6.14-7.2) a payload buffer per entry.
 *
 * Rules of the kernel this file keeps (see shared/docs/kernel-fuse-uring.md):
 *  - a failed REGISTER disables io_uring for the connection, and on a live
 *    ring turns every later commit into -EOPNOTSUPP: every argument is
 *    checked, and all rings and buffers exist, before the first REGISTER;
 *  - every possible CPU needs a registered entry before the ring is ready,
 *    and until then ordinary requests block in the kernel;
 *  - requests that expect no reply (a forced FORGET) must still be committed;
 *  - INIT, FORGET, BATCH_FORGET, INTERRUPT and notifications stay on
 *    /dev/fuse (dev.c keeps one reader for them);
 *  - on unmount every entry the kernel holds completes with -ENOTCONN.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "dev.h"
#include "dispatch.h"
#include "io.h"
#include "io_copy.h"
#include "log.h"
#include "uring.h"
#include "uring_i.h"

__thread struct ring_worker *ufs_this_ring_worker;

static void ring_reply(struct ufs_req *req, int error, size_t len);
static int ring_hold(struct ufs_req *req);

const struct ufs_transport_ops ufs_ring_ops = {
	.name = "uring",
	.reply = ring_reply,
	.io_submit = ring_io_submit,
	.hold = ring_hold,
};

/* The number of CPUs the kernel may ever have: it sizes the queue array by it. */
static int possible_cpus(void)
{
	cpu_set_t set;
	unsigned int count;
	char buf[256];
	ssize_t n;
	int fd;

	fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (ufs_parse_cpulist(buf, &set, &count) || !count)
		return -EINVAL;
	return count;
}

bool ufs_uring_supported(void)
{
	struct io_uring ring;
	struct io_uring_probe *probe;
	bool ok;

	if (io_uring_queue_init(4, &ring, IORING_SETUP_SQE128))
		return false;
	probe = io_uring_get_probe_ring(&ring);
	ok = probe && io_uring_opcode_supported(probe, IORING_OP_URING_CMD);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	return ok;
}

/* An SQE, flushing the submission queue if it is full. */
struct io_uring_sqe *ring_get_sqe(struct ring_worker *rw)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rw->ring);

	while (!sqe) {
		int ret = io_uring_submit(&rw->ring);

		/*
		 * The ring has room for every entry's command and one I/O each,
		 * so this only waits out a kernel that is short of memory.
		 * Dropping a commit would leave its caller waiting forever.
		 */
		if (ret < 0 && ret != -EAGAIN && ret != -EBUSY && ret != -EINTR) {
			ufs_err("worker %u: cannot submit: %s", rw->w->id, strerror(-ret));
			abort();
		}
		sqe = io_uring_get_sqe(&rw->ring);
	}
	rw->last_sqe = sqe;
	return sqe;
}

struct io_uring_sqe *ring_last_sqe(struct ring_worker *rw)
{
	return rw->last_sqe;
}

/* A FUSE command SQE: the whole 128 bytes zeroed, as the kernel checks padding. */
static struct ufs_uring_cmd_req *prep_fuse_cmd(struct io_uring_sqe *sqe, int fuse_fd,
					       enum ufs_uring_cmd op, uint16_t qid)
{
	struct ufs_uring_cmd_req *cmd;

	memset(sqe, 0, 128);
	cmd = (void *)sqe->cmd;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fuse_fd;
	sqe->cmd_op = op;
	cmd->qid = qid;
	return cmd;
}

/* ---- setup ---- */

/*
 * io-wq threads are forked from the worker that first punts work and keep
 * the CPU mask it set with sched_setaffinity() as their "user" mask:
 * IORING_REGISTER_IOWQ_AFF is intersected with it, unless the two are
 * disjoint, when the registered mask wins.
 *
 * By default io-wq follows its pinned worker, said explicitly so that it
 * does on every kernel: a read punted there (tmpfs has no NOWAIT reads)
 * then copies on the CPU of the queue it serves, which measured a third
 * faster than the other CPUs.  Ring copies run in io-wq too, for as long
 * as a copy takes: then io-wq goes to the daemon's other CPUs, so that a
 * copy does not share the worker's CPU with the requests it serves (the
 * RFC's ~3 ms tails for pinned submitters).
 */
static void ring_iowq_place(struct ring_worker *rw)
{
	const struct ufs_daemon *d = rw->u->d;
	cpu_set_t set = rw->cpus;
	int ret;

	if (!CPU_COUNT(&rw->cpus))
		return;				/* not pinned: io-wq goes anywhere */
	if (d->cfr == UFS_CFR_RING) {
		cpu_set_t others;

		CPU_XOR(&others, &d->cpus, &rw->cpus);
		CPU_AND(&others, &others, &d->cpus);
		if (CPU_COUNT(&others))
			set = others;
	}
	ret = io_uring_register_iowq_aff(&rw->ring, sizeof(set), &set);
	if (ret)
		ufs_warn("worker %u: IORING_REGISTER_IOWQ_AFF: %s", rw->w->id, strerror(-ret));
}

static int ring_create(struct ring_worker *rw, unsigned int entries)
{
	struct io_uring_params p = { 0 };
	int ret;

	/* One thread submits and reaps: let the kernel run completions on our time. */
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	ret = io_uring_queue_init_params(entries, &rw->ring, &p);
	if (ret == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = IORING_SETUP_SQE128;
		ret = io_uring_queue_init_params(entries, &rw->ring, &p);
		if (!ret)
			ufs_log_once(UFS_LOG_DEBUG, "io_uring: SINGLE_ISSUER/DEFER_TASKRUN unavailable");
	}
	if (ret)
		return ret;
	rw->ring_ok = true;
	ring_iowq_place(rw);
	return 0;
}

static void *map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Header and payload memory, allocated by the worker itself (NUMA-local). */
static unsigned int ring_worker_nents(const struct ring_worker *rw)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rw->nqueues; i++)
		n += rw->queues[i].nents;
	return n;
}

static int ring_buffers_alloc(struct ring_worker *rw)
{
	struct ufs_uring *u = rw->u;
	size_t nents = ring_worker_nents(rw);

	rw->headers_len = nents * sizeof(struct ufs_uring_req_header);
	rw->headers = map_anon(rw->headers_len);
	if (!rw->headers)
		return -ENOMEM;
	if (u->bufpool) {
		for (unsigned int i = 0; i < rw->nqueues; i++) {
			struct ring_queue *q = &rw->queues[i];

			if (!q->owner)
				continue;	/* shares the owner's pool */
			q->pool_len = (size_t)u->pool_bufs * u->max_payload;
			q->pool = map_anon(q->pool_len);
			if (!q->pool)
				return -ENOMEM;
		}
		return 0;
	}
	rw->payloads_len = nents * u->max_payload;
	rw->payloads = map_anon(rw->payloads_len);
	return rw->payloads ? 0 : -ENOMEM;
}

static void ring_ents_init(struct ring_worker *rw)
{
	struct ufs_uring *u = rw->u;
	size_t n = 0;

	for (unsigned int i = 0; i < rw->nqueues; i++) {
		struct ring_queue *q = &rw->queues[i];

		for (unsigned int e = 0; e < q->nents; e++, n++) {
			struct ring_ent *ent = &q->ents[e];

			ent->q = q;
			ent->hdr = &rw->headers[n];
			ent->iov[0].iov_base = ent->hdr;
			ent->iov[0].iov_len = sizeof(*ent->hdr);
			if (!u->bufpool) {
				ent->payload = rw->payloads + n * u->max_payload;
				ent->iov[1].iov_base = ent->payload;
				ent->iov[1].iov_len = u->max_payload;
			}
			ent->req.xops = &ufs_ring_ops;
			ent->req.worker = rw->w;
			ent->idx = rw->next_idx++;
		}
	}
}

/* Submit one setup command and wait for its completion. */
static int ring_setup_cmd(struct ring_worker *rw, struct io_uring_sqe *sqe)
{
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_SETUP));
	ret = io_uring_submit_and_wait(&rw->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&rw->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&rw->ring, cqe);
	return ret;
}

static int ring_add_queue(struct ring_worker *rw, struct ring_queue *q, uint64_t flags)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_ADD_QUEUE, q->qid)->flags = flags;
	return ring_setup_cmd(rw, sqe);
}

/*
 * ADD_QUEUE, with FUSE_URING_ZERO_COPY when wanted.  The kernel refuses
 * zero copy with EPERM without CAP_SYS_ADMIN (in the initial namespace) and
 * with EINVAL before 7.3; the queue is then added without it.
 */
static int ring_queue_add_zc(struct ring_worker *rw, struct ring_queue *q)
{
	struct ufs_uring *u = rw->u;
	int ret;

	if (u->zc_wanted) {
		ret = ring_add_queue(rw, q, UFS_URING_ZERO_COPY);
		if (!ret) {
			q->zero_copy = true;
			return 0;
		}
		if (ret != -EPERM && ret != -EINVAL) {
			ufs_err("io_uring: ADD_QUEUE qid=%u (zero copy): %s", q->qid,
				strerror(-ret));
			return ret;
		}
		pthread_mutex_lock(&u->lock);
		u->zc_refused = ret;
		pthread_mutex_unlock(&u->lock);
	}
	ret = ring_add_queue(rw, q, 0);
	if (ret)
		ufs_err("io_uring: ADD_QUEUE qid=%u: %s", q->qid, strerror(-ret));
	return ret;
}

/* ADD_QUEUE then ADD_BUFPOOL (7.3); neither failure disables io_uring. */
static int ring_queue_add(struct ring_worker *rw, struct ring_queue *q)
{
	struct ufs_uring_cmd_req *cmd;
	struct io_uring_sqe *sqe;
	int ret;

	/* The kernel cuts the pool into len / max_payload buffers; len is 32 bits. */
	if (q->pool_len > UINT32_MAX || q->pool_len / rw->u->max_payload < rw->u->depth) {
		ufs_err("io_uring: buffer pool of %zu bytes does not fit qid=%u", q->pool_len,
			q->qid);
		return -EINVAL;
	}
	ret = ring_queue_add_zc(rw, q);
	if (ret)
		return ret;
	sqe = ring_get_sqe(rw);
	cmd = prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_ADD_BUFPOOL, q->qid);
	cmd->bufpool.uaddr = (uintptr_t)q->pool;
	cmd->bufpool.len = q->pool_len;
	ret = ring_setup_cmd(rw, sqe);
	if (ret)
		ufs_err("io_uring: ADD_BUFPOOL qid=%u: %s", q->qid, strerror(-ret));
	return ret;
}

/* Everything a worker needs before any REGISTER may go out. */
static int ring_build(struct ring_worker *rw)
{
	struct ufs_uring *u = rw->u;
	unsigned int nents = ring_worker_nents(rw);
	unsigned int sq = 8;
	int ret;

	/* Room for every entry's command and one I/O per entry, plus the eventfd read. */
	while (sq < 2 * nents + 4)
		sq <<= 1;
	ret = ring_create(rw, sq);
	if (ret) {
		ufs_err("worker %u: io_uring_queue_init(%u, SQE128): %s", rw->w->id, sq,
			strerror(-ret));
		return ret;
	}
	ret = ring_buffers_alloc(rw);
	if (ret) {
		ufs_err("worker %u: cannot allocate ring buffers: %s", rw->w->id, strerror(-ret));
		return ret;
	}
	rw->event_fd = eventfd(0, EFD_CLOEXEC);
	if (rw->event_fd < 0)
		return -errno;
	for (unsigned int i = 0; u->bufpool && i < rw->nqueues; i++) {
		if (!rw->queues[i].owner)
			continue;
		ret = ring_queue_add(rw, &rw->queues[i]);
		if (ret)
			return ret;
	}
	/*
	 * The kernel registers client pages at an entry's slot: the table
	 * must exist first.  Queues shared with another worker learn their
	 * zero-copy state only later, so build it whenever zero copy may come.
	 */
	rw->nslots = 1 + nents;
	if (u->zc_wanted) {
		ret = ring_zc_setup(rw);
		if (ret)
			return ret;
	}
	ring_ents_init(rw);
	return 0;
}

static void ring_event_arm(struct ring_worker *rw)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	io_uring_prep_read(sqe, rw->event_fd, &rw->event_value, sizeof(rw->event_value), 0);
	io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_EVENT));
}

static void ring_ent_register(struct ring_worker *rw, struct ring_ent *ent)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	/* The slot where the kernel registers this entry's client pages (0 unless zero copy). */
	ent->slot = ent->q->zero_copy ? ent->idx + 1 : 0;
	prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_REGISTER, ent->q->qid)->ent_zero_copy_buf_index =
		ent->slot;
	/* Per-entry mode: header and payload; pool mode: the payload iovec is {NULL, 0}. */
	sqe->addr = (uintptr_t)ent->iov;
	sqe->len = 2;
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_ENT));
	ent->state = RING_ENT_KERNEL;
}

/*
 * Register every entry.  A REGISTER that fails does so during submission
 * and posts its CQE at once; one that succeeds posts nothing until a
 * request arrives.  So after submitting, any error is already in the CQ.
 * The CQEs are left there for the serving loop.
 */
/* Which of this worker's entries a registration phase covers. */
static bool ent_in_phase(const struct ring_queue *q, unsigned int e, enum uring_setup_phase phase)
{
	bool key = q->qid == 0, first = key && q->owner && e == 0;

	switch (phase) {
	case SETUP_REGISTER_MOST:
		return !key;
	case SETUP_REGISTER_KEY:
		return first;
	case SETUP_REGISTER_REST:
		return key && !first;
	case SETUP_BUILDING:
	case SETUP_SERVE:
	case SETUP_ABANDON:
		break;
	}
	return false;
}

/*
 * Register the entries of one phase.  A REGISTER that fails does so during
 * submission and posts its CQE at once; one that succeeds posts nothing
 * until a request arrives.  So after submitting, any error is already in
 * the CQ.  The CQEs stay there for the serving loop.
 */
static int ring_register_phase(struct ring_worker *rw, enum uring_setup_phase phase)
{
	struct io_uring_cqe *cqe;
	unsigned int head;
	int ret;

	for (unsigned int i = 0; i < rw->nqueues; i++) {
		struct ring_queue *q = &rw->queues[i];

		for (unsigned int e = 0; e < q->nents; e++) {
			if (!ent_in_phase(q, e, phase))
				continue;
			ring_ent_register(rw, &q->ents[e]);
			rw->live_ents++;
		}
	}
	if (phase == SETUP_REGISTER_MOST)
		ring_event_arm(rw);
	ret = io_uring_submit(&rw->ring);
	if (ret < 0)
		return ret;
	/* A REGISTER left in the SQ would go out in a later phase, after the ring is ready. */
	if (io_uring_sq_ready(&rw->ring)) {
		ufs_err("io_uring: %u REGISTERs not submitted", io_uring_sq_ready(&rw->ring));
		return -EAGAIN;
	}
	ret = 0;
	io_uring_for_each_cqe(&rw->ring, head, cqe) {
		if (((uintptr_t)cqe->user_data & RING_TAG_MASK) == RING_TAG_ENT && cqe->res < 0) {
			ufs_err("io_uring: REGISTER failed: %s", strerror(-cqe->res));
			ret = cqe->res;
		}
	}
	return ret;
}

/*
 * Tell the kernel to give up on io_uring before the ring is ready: a
 * REGISTER that fails (one iovec instead of two) makes it serve the
 * connection over /dev/fuse for good.
 */
static int uring_force_dev_fallback(int fuse_fd)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct iovec iov = { 0 };
	int ret;

	ret = io_uring_queue_init(4, &ring, IORING_SETUP_SQE128);
	if (ret)
		return ret;
	sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_queue_exit(&ring);
		return -EBUSY;
	}
	prep_fuse_cmd(sqe, fuse_fd, UFS_URING_CMD_REGISTER, 0);
	sqe->addr = (uintptr_t)&iov;
	sqe->len = 1;
	ret = io_uring_submit_and_wait(&ring, 1);
	if (ret >= 0) {
		ret = io_uring_wait_cqe(&ring, &cqe);
		if (!ret) {
			/* EOPNOTSUPP: a REGISTER of ours already failed and did the same. */
			ret = cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP ? 0 : -EPROTO;
			io_uring_cqe_seen(&ring, cqe);
		}
	}
	io_uring_queue_exit(&ring);
	return ret;
}

static void setup_report(struct ufs_uring *u, int error)
{
	pthread_mutex_lock(&u->lock);
	if (error && !u->error)
		u->error = error;
	u->reported++;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* Wait for the phase after done; every worker reports each phase it was given. */
static enum uring_setup_phase setup_wait_phase(struct ufs_uring *u, enum uring_setup_phase done)
{
	enum uring_setup_phase phase;

	pthread_mutex_lock(&u->lock);
	while (u->phase == done)
		pthread_cond_wait(&u->cond, &u->lock);
	phase = u->phase;
	pthread_mutex_unlock(&u->lock);
	return phase;
}

/* ---- serving ---- */

void ring_commit(struct ring_worker *rw, struct ring_ent *ent, int error, size_t len)
{
	struct ufs_uring_req_header *hdr = ent->hdr;
	struct fuse_out_header *out = (void *)hdr->in_out;
	uint64_t unique = ((struct fuse_in_header *)hdr->in_out)->unique;
	struct ufs_uring_cmd_req *cmd;
	struct io_uring_sqe *sqe;

	if (ent->held) {
		__atomic_sub_fetch(&ent->q->owner_q->held, 1, __ATOMIC_RELAXED);
		ent->held = false;
	}
	/* No-reply requests are committed too, or their caller waits forever. */
	if (ent->req.noreply) {
		error = 0;
		len = 0;
	}
	/* out overlays in: unique sits at the same offset in both headers. */
	out->len = sizeof(*out) + len;
	out->error = error;
	out->unique = unique;
	hdr->ring_ent_in_out.payload_sz = len;

	sqe = ring_get_sqe(rw);
	cmd = prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_COMMIT_AND_FETCH, ent->q->qid);
	cmd->commit_id = unique;
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_ENT));
	ent->state = RING_ENT_KERNEL;
}

/*
 * A request on ent will hold it for a long time (a lock wait).  The kernel
 * gives a queue's requests only to its idle entries, so if waits held them
 * all, the process that would end the waits could never be served.  Keep
 * one entry of every queue free: a wait that would take the last one fails
 * with ENOLCK.  The hold ends with the request's commit.
 */
static int ring_hold(struct ufs_req *req)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ring_queue *q = ent->q->owner_q;

	if (__atomic_add_fetch(&q->held, 1, __ATOMIC_RELAXED) >= (int)q->total_ents) {
		__atomic_sub_fetch(&q->held, 1, __ATOMIC_RELAXED);
		ufs_log_once(UFS_LOG_WARN, "io_uring: qid=%u: every entry but one holds a long wait "
			     "(a lock, an open behind a lease): the next answers ENOLCK "
			     "(raise queue_depth)", q->qid);
		return -ENOLCK;
	}
	ent->held = true;
	return 0;
}

/* The transport's reply: commit now on the worker's thread, else hand it over. */
static void ring_reply(struct ufs_req *req, int error, size_t len)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ring_worker *rw = ent->q->rw;
	uint64_t one = 1;

	if (ufs_this_ring_worker == rw) {
		if (!ring_zc_reply(rw, ent, error, len))
			ring_commit(rw, ent, error, len);
		return;
	}
	pthread_mutex_lock(&rw->remote_lock);
	ent->remote_error = error;
	ent->remote_len = len;
	ent->remote_next = rw->remote_head;
	rw->remote_head = ent;
	pthread_mutex_unlock(&rw->remote_lock);
	if (write(rw->event_fd, &one, sizeof(one)) < 0)
		ufs_log_once(UFS_LOG_ERR, "waking worker %u: %m", rw->w->id);
}


static void ring_remote_drain(struct ring_worker *rw)
{
	struct ring_cancel *cancels;
	struct ring_ent *ent;

	pthread_mutex_lock(&rw->remote_lock);
	ent = rw->remote_head;
	rw->remote_head = NULL;
	cancels = rw->cancel_head;
	rw->cancel_head = NULL;
	pthread_mutex_unlock(&rw->remote_lock);
	ring_cancels_submit(rw, cancels);
	while (ent) {
		struct ring_ent *next = ent->remote_next;

		if (!ring_zc_reply(rw, ent, ent->remote_error, ent->remote_len))
			ring_commit(rw, ent, ent->remote_error, ent->remote_len);
		ent = next;
	}
}


/*
 * INTERRUPT of a copy on this ring (called with the copy registry locked,
 * from the /dev/fuse reader): the worker itself must cancel it.
 */




/* A request arrived in ent's buffers: check what the kernel says, then serve it. */
static void ring_ent_serve(struct ring_worker *rw, struct ring_ent *ent)
{
	struct ufs_uring *u = rw->u;
	struct ufs_uring_req_header *hdr = ent->hdr;
	const struct fuse_in_header *in = (const void *)hdr->in_out;
	const struct ufs_uring_ent_in_out *eio = &hdr->ring_ent_in_out;
	uint8_t *payload = ent->payload;
	struct ufs_msg msg;

	ent->state = RING_ENT_SERVING;
	/* Nothing of the entry's previous request may leak into an early commit. */
	ent->req.noreply = false;
	ent->req.zero_copy = false;
	ent->zc_in_slot = false;
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
	ent->req.zero_copy = false;
	ent->zc_in_slot = false;
	if (eio->flags & UFS_URING_ENT_ZERO_COPY) {
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

static void ring_ent_complete(struct ring_worker *rw, struct ring_ent *ent, int res)
{
	if (!res) {
		ring_ent_serve(rw, ent);
		return;
	}
	/*
	 * -ENOTCONN: unmounted or aborted; -ECONNABORTED: aborted with an
	 * error; -ECANCELED: the ring is going away.  Anything else is a
	 * commit the kernel refused, and the entry is gone all the same.
	 */
	ent->state = RING_ENT_DEAD;
	rw->live_ents--;
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

static int ring_serve(struct ring_worker *rw)
{
	while (!ring_worker_done(rw)) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;
		int ret;

		ret = io_uring_submit_and_wait(&rw->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY) {
			ufs_err("worker %u: io_uring_enter: %s", rw->w->id, strerror(-ret));
			ufs_daemon_fatal(rw->u->d, ret);
			return ret;
		}
		io_uring_for_each_cqe(&rw->ring, head, cqe) {
			ring_cqe_handle(rw, cqe);
			seen++;
		}
		io_uring_cq_advance(&rw->ring, seen);
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

static void *ring_worker_main(void *arg)
{
	struct ring_worker *rw = arg;
	struct ufs_uring *u = rw->u;
	enum uring_setup_phase phase = SETUP_BUILDING;
	int ret;

	ufs_this_ring_worker = rw;
	ufs_worker_thread_setup(rw->w, "ring");
	ring_worker_pin_queues(rw);
	ret = ring_build(rw);
	setup_report(u, ret);
	for (;;) {
		phase = setup_wait_phase(u, phase);
		if (phase == SETUP_SERVE)
			break;
		if (phase == SETUP_ABANDON)
			goto out_quiet;
		setup_report(u, ring_register_phase(rw, phase));
	}
	ret = ring_serve(rw);
	ufs_daemon_worker_exited(u->d, ret);
	return NULL;

out_quiet:
	/* Set-up did not complete: ufs_uring_start() reports it, not the main loop. */
	__atomic_fetch_sub(&u->d->workers_running, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- start and stop ---- */

static int uring_alloc(struct ufs_daemon *d, struct ufs_uring **out)
{
	struct ufs_uring *u;
	int ncpus = possible_cpus();

	if (ncpus < 0) {
		ufs_err("io_uring: cannot read /sys/devices/system/cpu/possible: %s",
			strerror(-ncpus));
		return ncpus;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->d = d;
	u->nr_queues = ncpus;
	u->depth = d->cfg.queue_depth;
	/* A buffer for every entry the queue has, or requests could wait for one. */
	u->pool_bufs = d->cfg.bufpool_buffers ? d->cfg.bufpool_buffers :
						d->cfg.queue_depth + RING_RESERVE;
	u->max_payload = d->conn.max_payload;
	u->bufpool = d->conn.uring_bufpool;
	u->zc_wanted = u->bufpool && d->cfg.zero_copy != UFS_SWITCH_OFF;
	/* More workers than queues share queues; no more than one entry each, though. */
	u->nrws = d->nworkers;
	if (u->nrws > u->nr_queues * u->depth) {
		u->nrws = u->nr_queues * u->depth;
		ufs_info("io_uring: %u queues of %u entries: using %u workers, not %u",
			 u->nr_queues, u->depth, u->nrws, d->nworkers);
	}
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->rws = calloc(u->nrws, sizeof(*u->rws));
	if (!u->rws) {
		free(u);
		return -ENOMEM;
	}
	*out = u;
	return 0;
}

/*
 * Queue q goes to worker q % W.  With more workers than queues, worker w
 * serves queue w % Q together with the other workers of that queue, and
 * the queue's entries are split among them.
 */
static int uring_assign_queues(struct ufs_uring *u)
{
	unsigned int W = u->nrws, Q = u->nr_queues;

	/* All of them first: uring_free() must find every descriptor at -1. */
	for (unsigned int i = 0; i < W; i++) {
		struct ring_worker *rw = &u->rws[i];

		rw->u = u;
		rw->w = &u->d->workers[i];
		rw->fuse_fd = -1;
		rw->event_fd = -1;
		rw->bounce_fd = -1;
		pthread_mutex_init(&rw->remote_lock, NULL);
	}
	for (unsigned int i = 0; i < W; i++) {
		struct ring_worker *rw = &u->rws[i];

		rw->nqueues = W <= Q ? (Q - i + W - 1) / W : 1;
		rw->queues = calloc(rw->nqueues, sizeof(*rw->queues));
		if (!rw->queues) {
			rw->nqueues = 0;
			return -ENOMEM;
		}
		for (unsigned int k = 0; k < rw->nqueues; k++) {
			struct ring_queue *q = &rw->queues[k];
			unsigned int sharers = 1, nth = 0;

			q->qid = W <= Q ? i + k * W : i % Q;
			if (W > Q) {
				sharers = (W - q->qid + Q - 1) / Q;
				nth = i / Q;
			}
			q->rw = rw;
			q->owner = nth == 0;
			q->owner_q = q;
			q->total_ents = u->depth + RING_RESERVE;
			/* The owner takes the reserve entries. */
			q->nents = u->depth / sharers + (nth < u->depth % sharers) +
				   (q->owner ? RING_RESERVE : 0);
			q->ents = calloc(q->nents, sizeof(*q->ents));
			if (!q->ents)
				return -ENOMEM;
		}
	}
	return 0;
}

/* After the build: shares of a queue take the owner's pool and zero-copy state. */
static void uring_share_queues(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nrws; i++) {
		struct ring_queue *q = &u->rws[i].queues[0];
		struct ring_queue *owner = &u->rws[q->qid].queues[0];

		if (q->owner)
			continue;
		q->owner_q = owner;
		q->pool = owner->pool;
		q->pool_len = owner->pool_len;
		q->zero_copy = owner->zero_copy;
	}
}

static void ring_worker_free(struct ring_worker *rw)
{
	/* Closing the ring also releases zero-copy slots an abort left registered. */
	if (rw->ring_ok)
		io_uring_queue_exit(&rw->ring);
	rw->ring_ok = false;
	ring_zc_teardown(rw);
	if (rw->event_fd >= 0)
		close(rw->event_fd);
	if (rw->fuse_fd >= 0)
		close(rw->fuse_fd);
	for (unsigned int k = 0; k < rw->nqueues; k++) {
		struct ring_queue *q = &rw->queues[k];

		if (q->pool && q->owner)
			munmap(q->pool, q->pool_len);
		free(q->ents);
	}
	free(rw->queues);
	if (rw->headers)
		munmap(rw->headers, rw->headers_len);
	if (rw->payloads)
		munmap(rw->payloads, rw->payloads_len);
	pthread_mutex_destroy(&rw->remote_lock);
}

static void uring_free(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nrws; i++)
		ring_worker_free(&u->rws[i]);
	free(u->rws);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

static void uring_join(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nrws; i++) {
		struct ufs_worker *w = u->rws[i].w;

		if (w->started) {
			pthread_join(w->thread, NULL);
			w->started = false;
		}
	}
}

static int uring_spawn(struct ufs_uring *u)
{
	struct ufs_daemon *d = u->d;

	for (unsigned int i = 0; i < u->nrws; i++) {
		struct ring_worker *rw = &u->rws[i];
		int ret;

		rw->fuse_fd = ufs_dev_clone(d->fuse_fd);
		if (rw->fuse_fd < 0)
			return rw->fuse_fd;
		rw->w->xpriv = rw;
		__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
		ret = -pthread_create(&rw->w->thread, NULL, ring_worker_main, rw);
		if (ret) {
			__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
		rw->w->started = true;
	}
	return 0;
}

/* Wait until count reaches the number of started workers. */
static void setup_wait_count(struct ufs_uring *u, unsigned int *count, unsigned int want)
{
	pthread_mutex_lock(&u->lock);
	while (*count < want)
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
}

static unsigned int started_workers(struct ufs_uring *u)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < u->nrws; i++)
		n += u->rws[i].w->started;
	return n;
}

static void setup_set_phase(struct ufs_uring *u, enum uring_setup_phase phase)
{
	pthread_mutex_lock(&u->lock);
	u->phase = phase;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/*
 * What zero copy came to, for the stats and the log; with zero_copy=on,
 * anything but every queue on is a start-up error.
 */
static int uring_zero_copy_state(struct ufs_uring *u)
{
	struct ufs_daemon *d = u->d;
	unsigned int on = 0;

	for (unsigned int i = 0; i < u->nrws; i++) {
		for (unsigned int k = 0; k < u->rws[i].nqueues; k++)
			on += u->rws[i].queues[k].owner && u->rws[i].queues[k].zero_copy;
	}
	if (!u->zc_wanted)
		d->zero_copy_state = "off";
	else if (on == u->nr_queues)
		d->zero_copy_state = "on";
	else
		d->zero_copy_state = u->zc_refused == -EPERM ? "eperm" : "einval";
	d->fs.zero_copy = on > 0;
	d->zc_queues = on;
	d->nr_queues = u->nr_queues;
	if (!u->zc_wanted && d->cfg.zero_copy != UFS_SWITCH_OFF)
		ufs_info("zero copy: off (the kernel has no FUSE-over-io_uring buffer pools, Linux 7.3)");
	else if (on && on == u->nr_queues)
		ufs_info("zero copy: on (%u queues)", on);
	else if (u->zc_wanted)
		ufs_log(d->cfg.zero_copy == UFS_SWITCH_ON ? UFS_LOG_ERR : UFS_LOG_WARN,
			"zero copy: refused by the kernel with %s%s; queues copy instead",
			u->zc_refused == -EPERM ? "EPERM" : "EINVAL",
			u->zc_refused == -EPERM ? " (needs CAP_SYS_ADMIN)" : "");
	if (d->cfg.zero_copy == UFS_SWITCH_ON && on != u->nr_queues)
		return -EOPNOTSUPP;
	return 0;
}

/* Give up before any REGISTER: the kernel must be told, or requests block forever. */
static int uring_abandon(struct ufs_uring *u)
{
	int ret;

	setup_set_phase(u, SETUP_ABANDON);
	uring_join(u);
	ret = uring_force_dev_fallback(u->d->fuse_fd);
	if (ret)
		ufs_err("io_uring: cannot hand the connection back to /dev/fuse: %s",
			strerror(-ret));
	uring_free(u);
	return ret ? ret : -EAGAIN;
}

/* Move every worker to phase and wait for their reports; returns the first error. */
static int setup_run_phase(struct ufs_uring *u, enum uring_setup_phase phase)
{
	unsigned int workers = started_workers(u);
	int error;

	pthread_mutex_lock(&u->lock);
	u->phase = phase;
	u->reported = 0;
	pthread_cond_broadcast(&u->cond);
	while (u->reported < workers)
		pthread_cond_wait(&u->cond, &u->lock);
	error = u->error;
	pthread_mutex_unlock(&u->lock);
	return error;
}

static void describe_transport(struct ufs_daemon *d, struct ufs_uring *u, bool uring)
{
	d->transport = uring ? UFS_TRANSPORT_URING : UFS_TRANSPORT_DEV;
	d->nworkers = uring ? u->nrws : d->workers_alloc;
	d->queue_mode = !uring ? "-" : u->bufpool ? "bufpool" : "per-entry";
}

/*
 * Build the rings and register every entry, in the order that keeps a
 * failure harmless for as long as possible (see enum uring_setup_phase).
 * Returns 0 serving, -EAGAIN if the kernel now serves /dev/fuse instead,
 * or another error: then the connection may be wedged and must end.
 */
int ufs_uring_start(struct ufs_daemon *d)
{
	struct ufs_uring *u;
	int ret;

	ret = uring_alloc(d, &u);
	if (ret) {
		int fb = uring_force_dev_fallback(d->fuse_fd);

		return fb ? fb : -EAGAIN;
	}
	ret = uring_assign_queues(u);
	if (!ret)
		ret = uring_spawn(u);
	setup_wait_count(u, &u->reported, started_workers(u));
	if (!ret && !u->error) {
		uring_share_queues(u);
		ret = uring_zero_copy_state(u);
	}
	if (ret || u->error)
		return uring_abandon(u);

	/* Requests may flow as soon as the key queue registers: describe the transport first. */
	describe_transport(d, u, true);
	if (setup_run_phase(u, SETUP_REGISTER_MOST) || setup_run_phase(u, SETUP_REGISTER_KEY)) {
		/* The ring never became ready: the kernel can still serve /dev/fuse. */
		describe_transport(d, u, false);
		return uring_abandon(u);
	}
	ret = setup_run_phase(u, SETUP_REGISTER_REST);
	if (ret) {
		ufs_err("io_uring: a REGISTER failed on the ready ring (%s): the connection "
			"cannot be served and must end", strerror(-ret));
		setup_set_phase(u, SETUP_ABANDON);
		uring_join(u);
		uring_free(u);
		describe_transport(d, u, false);
		return -EIO;
	}
	setup_set_phase(u, SETUP_SERVE);
	d->uring = u;
	ufs_info("transport: io_uring=on queues=%u workers=%u depth=%u+%u queue_mode=%s "
		 "payload=%zu", u->nr_queues, u->nrws, u->depth, RING_RESERVE, d->queue_mode,
		 u->max_payload);
	return 0;
}

void ufs_uring_force_stop(struct ufs_daemon *d)
{
	struct ufs_uring *u = d->uring;
	uint64_t one = 1;

	if (!u)
		return;
	for (unsigned int i = 0; i < u->nrws; i++) {
		if (u->rws[i].event_fd >= 0 && write(u->rws[i].event_fd, &one, sizeof(one)) < 0)
			ufs_warn("waking worker %u: %m", i);
	}
}

void ufs_uring_stop(struct ufs_daemon *d)
{
	if (!d->uring)
		return;
	uring_join(d->uring);
	uring_free(d->uring);
	d->uring = NULL;
}
