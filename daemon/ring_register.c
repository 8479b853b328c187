// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Registering the entries, in phases that keep a failure harmless for as
 * long as possible (see enum uring_setup_phase), and the start-up
 * handshake between ufs_uring_start() and the workers that runs them.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <string.h>

#include "log.h"
#include "ring_ent.h"
#include "ring_guard.h"
#include "ring_keep.h"
#include "ring_register.h"
#include "ring_sqe.h"

static void ring_ent_register(struct ring_worker *rw, struct ring_ent *ent)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	/* The slot where the kernel registers this entry's client pages (0 unless zero copy). */
	ent->slot = ent->q->zero_copy ? ent->idx + 1 : 0;
	ent->rec->slot = ent->slot;
	ring_prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_REGISTER, ent->q->qid)->ent_zero_copy_buf_index =
		ent->slot;
	/* Per-entry mode: header and payload; pool mode: the payload iovec is {NULL, 0}. */
	sqe->addr = (uintptr_t)ent->iov;
	sqe->len = 2;
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_ENT));
	ring_ent_set(ent, RING_ENT_KERNEL);
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
int ring_register_phase(struct ring_worker *rw, enum uring_setup_phase phase)
{
	struct io_uring_cqe *cqe;
	unsigned int head;
	int ret;

	/* Before any entry: the kernel must never hold one of ours unguarded. */
	if (phase == SETUP_REGISTER_MOST) {
		ufs_debug_pause("register");	/* t_mount unmounts here */
		ring_exit_guard_arm(rw);
	}
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
		if (((uintptr_t)cqe->user_data & RING_TAG_MASK) != RING_TAG_ENT || cqe->res >= 0)
			continue;
		/* The connection ended (an unmount, an abort): ufs_uring_start says so, once. */
		if (ring_conn_ended(cqe->res)) {
			ret = ret ? ret : cqe->res;
			continue;
		}
		ufs_err("io_uring: REGISTER failed: %s", strerror(-cqe->res));
		if (!ret || ring_conn_ended(ret))
			ret = cqe->res;	/* any other failure is the one to report */
	}
	return ret;
}

/*
 * Tell the kernel to give up on io_uring before the ring is ready: a
 * REGISTER that fails (one iovec instead of two) makes it serve the
 * connection over /dev/fuse for good.
 */
int uring_force_dev_fallback(int fuse_fd)
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
	ring_prep_fuse_cmd(sqe, fuse_fd, UFS_URING_CMD_REGISTER, 0);
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

void uring_setup_report(struct ufs_uring *u, int error)
{
	pthread_mutex_lock(&u->lock);
	if (error && !u->error)
		u->error = error;
	u->reported++;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* Wait for the phase after done; every worker reports each phase it was given. */
enum uring_setup_phase uring_setup_wait_phase(struct ufs_uring *u, enum uring_setup_phase done)
{
	enum uring_setup_phase phase;

	pthread_mutex_lock(&u->lock);
	while (u->phase == done)
		pthread_cond_wait(&u->cond, &u->lock);
	phase = u->phase;
	pthread_mutex_unlock(&u->lock);
	return phase;
}

/* Wait until count reaches the number of started workers. */
void uring_setup_wait_count(struct ufs_uring *u, unsigned int *count, unsigned int want)
{
	pthread_mutex_lock(&u->lock);
	while (*count < want)
		pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
}

unsigned int uring_started_workers(struct ufs_uring *u)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < u->nrws; i++)
		n += u->rws[i].w->started;
	return n;
}

void uring_setup_set_phase(struct ufs_uring *u, enum uring_setup_phase phase)
{
	pthread_mutex_lock(&u->lock);
	u->phase = phase;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

/* Move every worker to phase and wait for their reports; returns the first error. */
int uring_setup_run_phase(struct ufs_uring *u, enum uring_setup_phase phase)
{
	unsigned int workers = uring_started_workers(u);
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
