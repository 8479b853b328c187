// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Replies on the ring: COMMIT_AND_FETCH, from the worker itself or handed
 * over by another thread, a zero-copied READ's bytes moved into its slot
 * first, and the budget of entries long waits may hold.
 */

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <unistd.h>

#include "dispatch.h"
#include "log.h"
#include "ring_ent.h"
#include "ring_io.h"
#include "ring_keep.h"
#include "ring_reply.h"
#include "ring_sqe.h"

void ring_commit(struct ring_worker *rw, struct ring_ent *ent, int error, size_t len)
{
	struct ufs_uring_req_header *hdr = ent->hdr;
	struct fuse_out_header *out = (void *)hdr->in_out;
	uint64_t unique = ((struct fuse_in_header *)hdr->in_out)->unique;
	struct ufs_uring_cmd_req *cmd;
	struct io_uring_sqe *sqe;

	ufs_req_replied(&ent->req);	/* before out overwrites in */
	if (ent->state == RING_ENT_HELD)
		__atomic_sub_fetch(&ent->q->owner_q->held, 1, __ATOMIC_RELAXED);
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
	ring_rec_ready(rw, ent);	/* a successor would commit this reply as it is */

	sqe = ring_get_sqe(rw);
	cmd = ring_prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_COMMIT_AND_FETCH, ent->q->qid);
	cmd->commit_id = unique;
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_ENT));
	ring_ent_set(ent, RING_ENT_KERNEL);
}

/* A predecessor's answered request: its reply is in the buffers, the commit never went. */
void ring_commit_as_is(struct ring_worker *rw, struct ring_ent *ent)
{
	const struct fuse_out_header *out = (const void *)ent->hdr->in_out;
	struct io_uring_sqe *sqe = ring_get_sqe(rw);
	struct ufs_uring_cmd_req *cmd;

	cmd = ring_prep_fuse_cmd(sqe, rw->fuse_fd, UFS_URING_CMD_COMMIT_AND_FETCH, ent->q->qid);
	cmd->commit_id = out->unique;
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_ENT));
	ring_ent_set(ent, RING_ENT_KERNEL);
}

/*
 * A request on ent will hold it for a long time (a lock wait, an open
 * behind a lease, a copy).  The kernel gives a queue's requests only to its
 * idle entries, in order, so if slow requests held them all, every other
 * request of that CPU would wait behind them: the copy seed's probe once
 * waited 7 s behind 60 copies.  So slow requests may hold hold_max entries
 * of a queue and the rest stay free (ring_free_reserve); a hold beyond
 * fails, and the caller answers otherwise (ENOLCK for a lock wait, the
 * kernel's own copy for a copy: copy.c).  The hold ends with the commit.
 */
static int ring_hold(struct ufs_req *req)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ring_queue *q = ent->q->owner_q;

	if (__atomic_add_fetch(&q->held, 1, __ATOMIC_RELAXED) > (int)q->hold_max) {
		__atomic_sub_fetch(&q->held, 1, __ATOMIC_RELAXED);
		ufs_log_once(UFS_LOG_WARN, "io_uring: qid=%u: %u entries hold long waits and "
			     "copies, the rest are kept for other requests: the next lock wait "
			     "answers ENOLCK, the next copy is the kernel's (raise queue_depth)",
			     q->qid, q->hold_max);
		return -ENOLCK;
	}
	ring_ent_set(ent, RING_ENT_HELD);
	return 0;
}

/* The transport's reply: commit now on the worker's thread, else hand it over. */
static void ring_reply(struct ufs_req *req, int error, size_t len)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ring_worker *rw = ent->q->rw;
	uint64_t one = 1;

	if (pthread_equal(pthread_self(), rw->thread)) {
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

static void count_zc_read(struct ring_worker *rw, struct ring_ent *ent, size_t len)
{
	struct ufs_stats *st = &rw->w->stats;

	if (ent->state != RING_ENT_IN_SLOT) {
		ufs_stat_add(&st->bounce_reads, 1);
	} else {
		ufs_stat_add(&st->zc_reads, 1);
		ufs_stat_add(&st->zc_read_bytes, len);
	}
}

/*
 * The reply of a zero-copied READ: its bytes must be in the slot before the
 * commit.  Bytes that went to the bounce region (O_DIRECT, the control
 * file) move there with one READ_FIXED from the memory file; the commit
 * follows its completion (ring_zc_slot_done).  Returns true if it took
 * over the commit.
 */
bool ring_zc_reply(struct ring_worker *rw, struct ring_ent *ent, int error, size_t len)
{
	struct io_uring_sqe *sqe;

	if (!ent->req.zero_copy || ent->req.in->opcode != FUSE_READ || error || !len)
		return false;
	count_zc_read(rw, ent, len);
	if (ent->state == RING_ENT_IN_SLOT)
		return false;
	sqe = ring_get_sqe(rw);
	io_uring_prep_read_fixed(sqe, rw->bounce_fd, NULL, len,
				 (uint64_t)ent->idx * rw->u->max_payload, ent->slot);
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_SLOT));
	ent->zc_len = len;
	ring_ent_set(ent, RING_ENT_SLOT_FILL);
	rw->ios_inflight++;
	return true;
}

void ring_zc_slot_done(struct ring_worker *rw, struct ring_ent *ent, int res)
{
	rw->ios_inflight--;
	if (res < 0) {
		ring_commit(rw, ent, res, 0);
		return;
	}
	/* Whatever reached the slot is what the client gets. */
	ring_commit(rw, ent, 0, (size_t)res < ent->zc_len ? (size_t)res : ent->zc_len);
}

const struct ufs_transport_ops ufs_ring_ops = {
	.name = "uring",
	.reply = ring_reply,
	.io_submit = ring_io_submit,
	.io_cancel = ring_io_cancel,
	.hold = ring_hold,
};
