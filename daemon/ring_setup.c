// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Setting up the io_uring transport: its queues dealt to the workers, and
 * each worker's ring, memory, kernel queues (ADD_QUEUE, ADD_BUFPOOL), slot
 * table and entries, all before any REGISTER may go out.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "ring_keep.h"
#include "ring_reply.h"
#include "ring_setup.h"
#include "ring_sqe.h"
#include "ring_teardown.h"

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

int uring_alloc(struct ufs_daemon *d, struct ufs_uring **out)
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
int uring_assign_queues(struct ufs_uring *u)
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
		rw->mem_fd = -1;
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
			q->hold_max = q->total_ents - ring_free_reserve(u->depth);
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
void uring_share_queues(struct ufs_uring *u)
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
	if (d->fs.copies.mode == UFS_CFR_RING) {
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

	/*
	 * One thread submits and reaps: let the kernel run completions on our
	 * time, and flag those waiting to run (ring_serve.c: ring_take_pending).
	 */
	p.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN |
		  IORING_SETUP_TASKRUN_FLAG;
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
	rw->taskrun_flag = p.flags & IORING_SETUP_TASKRUN_FLAG;
	ring_iowq_place(rw);
	return 0;
}

static unsigned int ring_worker_nents(const struct ring_worker *rw)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rw->nqueues; i++)
		n += rw->queues[i].nents;
	return n;
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
			ent->rec = &rw->recs[n];
			ent->rec->qid = q->qid;
			ent->rec->hdr_off = (uint8_t *)ent->hdr - rw->mem;
			ent->iov[0].iov_base = ent->hdr;
			ent->iov[0].iov_len = sizeof(*ent->hdr);
			if (!u->bufpool) {
				ent->payload = rw->payloads + n * u->max_payload;
				ent->iov[1].iov_base = ent->payload;
				ent->iov[1].iov_len = u->max_payload;
				ent->rec->payload_off = (uint8_t *)ent->payload - rw->mem;
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

	ring_prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_ADD_QUEUE, q->qid)->flags = flags;
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
			ring_mem_pool_zero_copy(rw, q);
			return 0;
		}
		if (ret != -EPERM && ret != -EINVAL) {
			if (!ring_conn_ended(ret))
				ufs_err("io_uring: ADD_QUEUE qid=%u (zero copy): %s", q->qid,
					strerror(-ret));
			return ret;
		}
		pthread_mutex_lock(&u->lock);
		u->zc_refused = ret;
		pthread_mutex_unlock(&u->lock);
	}
	ret = ring_add_queue(rw, q, 0);
	if (ret && !ring_conn_ended(ret))
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
	cmd = ring_prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_ADD_BUFPOOL, q->qid);
	cmd->bufpool.uaddr = (uintptr_t)q->pool;
	cmd->bufpool.len = q->pool_len;
	ret = ring_setup_cmd(rw, sqe);
	if (ret && !ring_conn_ended(ret))
		ufs_err("io_uring: ADD_BUFPOOL qid=%u: %s", q->qid, strerror(-ret));
	return ret;
}

/*
 * A sparse buffer table with one slot per entry, spares included, and the
 * bounce memory file.  Slot 0 stays empty: index 0 means "none" at REGISTER.
 */
static int ring_zc_setup(struct ring_worker *rw)
{
	size_t regions = rw->nslots - 1;
	int ret;

	ret = io_uring_register_buffers_sparse(&rw->ring, rw->nslots);
	if (ret) {
		ufs_err("worker %u: sparse buffer table of %u slots: %s", rw->w->id, rw->nslots,
			strerror(-ret));
		return ret;
	}
	rw->bounce_fd = memfd_create("uringfs-bounce", MFD_CLOEXEC);
	if (rw->bounce_fd < 0)
		return -errno;
	/* One payload buffer per entry; pages exist only where a bounce touched them. */
	rw->bounce_len = regions * rw->u->max_payload;
	if (ftruncate(rw->bounce_fd, rw->bounce_len))
		return -errno;
	rw->bounce = mmap(NULL, rw->bounce_len, PROT_READ | PROT_WRITE, MAP_SHARED, rw->bounce_fd,
			  0);
	if (rw->bounce == MAP_FAILED) {
		rw->bounce = NULL;
		return -errno;
	}
	return 0;
}

/* Everything a worker needs before any REGISTER may go out. */
int ring_build(struct ring_worker *rw)
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
	ret = ring_mem_build(rw);
	if (ret) {
		ufs_err("worker %u: cannot allocate ring buffers: %s", rw->w->id, strerror(-ret));
		return ret;
	}
	rw->event_fd = eventfd(0, EFD_CLOEXEC);
	if (rw->event_fd < 0)
		return -errno;
	for (unsigned int i = 0; u->bufpool && i < rw->nqueues; i++) {
		struct ring_queue *q = &rw->queues[i];

		if (!q->owner)
			continue;
		if (u->inherited) {
			/* The queue and its pool are the kernel's already, at the old address. */
			q->pool = uring_old_pool(u, q->qid, &q->pool_len, &q->zero_copy);
			if (!q->pool) {
				ufs_err("io_uring: the predecessor left no pool for qid=%u", q->qid);
				return -ENOENT;
			}
			continue;
		}
		ret = ring_queue_add(rw, q);
		if (ret)
			return ret;
	}
	/*
	 * The kernel registers client pages at an entry's slot: the table
	 * must exist first.  Queues shared with another worker learn their
	 * zero-copy state only later, so build it whenever zero copy may come.
	 */
	/* A successor's own slots come after those its predecessor's entries keep. */
	if (u->inherited)
		rw->next_idx = uring_old_max_slot(u, rw);
	rw->nslots = 1 + rw->next_idx + nents;
	if (u->zc_wanted) {
		ret = ring_zc_setup(rw);
		if (ret)
			return ret;
	}
	ring_ents_init(rw);
	return 0;
}
