// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Backing-file I/O on the worker's ring: READ, WRITE, FSYNC, FALLOCATE and
 * (with the proposed opcode) COPY_FILE_RANGE, and zero copy.
 *
 * Zero copy (Linux 7.3).  On a queue added with FUSE_URING_ZERO_COPY, a
 * READ or WRITE of a file opened with FOPEN_IO_URING_ZERO_COPY arrives with
 * FUSE_URING_ENT_ZERO_COPY: the kernel has registered the client's pages at
 * the entry's slot of this ring's buffer table (addresses count from 0).
 *  - READ: IORING_OP_READ_FIXED from the backing file into the slot, then
 *    the commit with payload_sz = bytes read.  No pool buffer is assigned.
 *  - WRITE: IORING_OP_WRITE_FIXED from the slot into the backing file; the
 *    8-byte fuse_write_out goes into the pool buffer, payload_sz = 8.
 * The commit goes out only after the fixed operation completed: the commit
 * is what releases the slot and finishes the client's pages.
 *
 * Data the file system handles in memory bounces through the worker's
 * memory file: a backing file opened O_DIRECT (its alignment rules are not
 * the client's pages') and, for READ, files without a descriptor (the
 * read-only control file).
 * READ puts the bytes in the entry's bounce region (a read of the backing
 * file, or the handler's own copy) and one READ_FIXED from the memory file
 * moves them into the slot; WRITE moves the slot into the region with one
 * WRITE_FIXED and writes the region to the backing file.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ident.h"
#include "io.h"
#include "log.h"
#include "ring_ent.h"
#include "ring_io.h"
#include "ring_sqe.h"

/* A zero-copied request whose data moves straight between file and slot. */
static bool io_direct_zc(const struct ufs_req *req)
{
	return req->zero_copy && !req->io.bounce;
}

/* One chunk of a copy (copy.c sets io to it). */
static void prep_copy_file_range(struct io_uring_sqe *sqe, const struct ufs_io *io)
{
	/* The proposed opcode, packed like splice (fuse_abi.h). */
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UFS_IORING_OP_COPY_FILE_RANGE;
	sqe->fd = io->fd;
	sqe->off = io->off;
	sqe->splice_fd_in = io->fd_in;
	sqe->splice_off_in = io->off_in;
	sqe->len = io->len;
	/* copy_file_range(2) takes no flags; splice_flags is SPLICE_F_FD_IN_FIXED's field. */
	sqe->splice_flags = 0;
}

/* The bounced WRITE's first step: the client's pages into the bounce region. */
static void prep_bounce_in(struct ring_worker *rw, struct ring_ent *ent, struct io_uring_sqe *sqe)
{
	io_uring_prep_write_fixed(sqe, rw->bounce_fd, NULL, ent->req.io.len,
				  (uint64_t)ent->idx * rw->u->max_payload, ent->slot);
}

/*
 * The personality of the writer's identity (ident.c): io_uring runs an SQE
 * that names one with the credentials registered under it, so the backing
 * file system charges the writer, not the worker.  Kept per worker, the
 * least recently used one replaced.  Returns the id, 0 for the worker's
 * own credentials, or -errno.
 */
static int ring_personality(struct ring_worker *rw, const struct ufs_ident *who)
{
	struct ring_persona *p, *victim = &rw->personas[0];
	struct ufs_ident_saved saved;
	int id, ret;

	if (!who->set)
		return 0;
	for (p = rw->personas; p < rw->personas + RING_PERSONAS; p++) {
		if (p->used && ufs_ident_equal(&p->who, who)) {
			p->used = ++rw->persona_clock;
			return p->id;
		}
		if (p->used < victim->used)
			victim = p;
	}
	if (victim->used) {
		/*
		 * An SQE takes its personality's credentials when it is
		 * submitted: submit those prepared with the victim first.
		 */
		io_uring_submit(&rw->ring);
		io_uring_unregister_personality(&rw->ring, victim->id);
		victim->used = 0;
	}
	ret = ufs_ident_enter(who, 0, &saved);
	if (ret)
		return ret;
	id = io_uring_register_personality(&rw->ring);
	ufs_ident_leave(&saved);
	if (id < 0)
		return id;
	victim->who = *who;
	victim->id = id;
	victim->used = ++rw->persona_clock;
	return id;
}

/* Prepares req's next SQE; false if it could not and req is done. */
static bool ring_io_prep(struct ring_worker *rw, struct ufs_req *req)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ufs_io *io = &req->io;
	/* The copy of the client's pages into the bounce region uses no space. */
	bool charged = io->op != UFS_IO_READ && io->op != UFS_IO_FSYNC &&
		       io->op != UFS_IO_FDATASYNC && ent->state != RING_ENT_BOUNCE_IN;
	int personality = charged ? ring_personality(rw, &io->who) : 0;
	struct io_uring_sqe *sqe;

	if (personality < 0) {
		/* Never as the worker: that would be root's space again. */
		ufs_log_once(UFS_LOG_ERR, "worker %u: no io_uring personality for uid %u: %s",
			     rw->w->id, io->who.uid, strerror(-personality));
		io->done(req, personality);
		return false;
	}
	sqe = ring_get_sqe(rw);
	char *buf = (char *)io->buf + io->done_bytes;
	void *slot_addr = (void *)(uintptr_t)io->done_bytes;
	size_t left = io->len - io->done_bytes;
	uint64_t off = io->off + io->done_bytes;

	switch (io->op) {
	case UFS_IO_READ:
		if (io_direct_zc(req))
			io_uring_prep_read_fixed(sqe, io->fd, slot_addr, left, off, ent->slot);
		else
			io_uring_prep_read(sqe, io->fd, buf, left, off);
		break;
	case UFS_IO_WRITE:
		if (io_direct_zc(req))
			io_uring_prep_write_fixed(sqe, io->fd, slot_addr, left, off, ent->slot);
		else if (ent->state == RING_ENT_BOUNCE_IN)
			prep_bounce_in(rw, ent, sqe);
		else
			io_uring_prep_write(sqe, io->fd, buf, left, off);
		break;
	case UFS_IO_FSYNC:
		io_uring_prep_fsync(sqe, io->fd, 0);
		break;
	case UFS_IO_FDATASYNC:
		io_uring_prep_fsync(sqe, io->fd, IORING_FSYNC_DATASYNC);
		break;
	case UFS_IO_FALLOCATE:
		io_uring_prep_fallocate(sqe, io->fd, io->mode, io->off, io->len);
		break;
	case UFS_IO_COPY:
		prep_copy_file_range(sqe, io);
		break;
	}
	sqe->personality = personality;
	io_uring_sqe_set_data(sqe, ring_tag(req, RING_TAG_IO));
	rw->ios_inflight++;
	return true;
}

/*
 * The transport's io_cancel, for a copy's chunk (copy.c calls it with its
 * registry locked, from the thread that read the INTERRUPT): the worker
 * itself must cancel it, on its own ring.
 */
void ring_io_cancel(struct ufs_req *req)
{
	struct ring_worker *rw = ring_req_to_ent(req)->q->rw;
	struct ring_cancel *c = malloc(sizeof(*c));
	uint64_t one = 1;

	if (!c)
		return;	/* the copy still stops at its next chunk */
	c->req = req;
	c->unique = req->in->unique;
	pthread_mutex_lock(&rw->remote_lock);
	c->next = rw->cancel_head;
	rw->cancel_head = c;
	pthread_mutex_unlock(&rw->remote_lock);
	if (write(rw->event_fd, &one, sizeof(one)) < 0)
		ufs_log_once(UFS_LOG_ERR, "waking worker %u: %m", rw->w->id);
}

/*
 * ASYNC_CANCEL the I/O of each cancel whose request is still the entry's:
 * by now it may have replied, and the entry may carry another request.
 */
void ring_cancels_submit(struct ring_worker *rw, struct ring_cancel *c)
{
	while (c) {
		struct ring_cancel *next = c->next;
		struct ring_ent *ent = ring_req_to_ent(c->req);

		if ((ent->state == RING_ENT_SERVING || ent->state == RING_ENT_HELD) &&
		    ((struct fuse_in_header *)ent->hdr->in_out)->unique == c->unique) {
			struct io_uring_sqe *sqe = ring_get_sqe(rw);

			io_uring_prep_cancel(sqe, ring_tag(c->req, RING_TAG_IO), 0);
			io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_SETUP));
		}
		free(c);
		c = next;
	}
}

void ring_io_submit(struct ufs_req *req)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ring_worker *rw = ent->q->rw;

	req->io.done_bytes = 0;
	if (req->zero_copy && req->io.op == UFS_IO_WRITE && req->io.bounce) {
		/* The slot to the bounce region first, then that to the backing file. */
		req->io.buf = ring_ent_bounce(rw, ent);
		ring_ent_set(ent, RING_ENT_BOUNCE_IN);
	} else if (io_direct_zc(req) && req->io.op == UFS_IO_READ) {
		ring_ent_set(ent, RING_ENT_IN_SLOT);
	}
	ring_io_prep(rw, req);
}

static void count_zc_write(struct ring_worker *rw, struct ufs_req *req, ssize_t res)
{
	struct ufs_stats *st = &rw->w->stats;

	if (res < 0)
		return;
	if (req->io.bounce) {
		ufs_stat_add(&st->bounce_writes, 1);
	} else {
		ufs_stat_add(&st->zc_writes, 1);
		ufs_stat_add(&st->zc_write_bytes, res);
	}
}

void ring_io_complete(struct ring_worker *rw, struct ufs_req *req, int res)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ufs_io *io = &req->io;
	ssize_t result = res;

	rw->ios_inflight--;
	if (io->op != UFS_IO_READ && io->op != UFS_IO_WRITE) {
		io->done(req, result);
		return;
	}
	if (ent->state == RING_ENT_BOUNCE_IN) {
		/* The bytes are in the bounce region: now write them out. */
		ring_ent_set(ent, RING_ENT_SERVING);
		if (res != (int)io->len) {
			io->done(req, res < 0 ? res : -EIO);
			return;
		}
		ring_io_prep(rw, req);
		return;
	}
	if (res == -EAGAIN) {
		/* A file that would block: retry from io-wq, where it may. */
		if (ring_io_prep(rw, req))
			io_uring_sqe_set_flags(ring_last_sqe(rw), IOSQE_ASYNC);
		return;
	}
	if (!ufs_io_progress(io, res, &result)) {
		ring_io_prep(rw, req);	/* a short transfer: continue it */
		return;
	}
	if (req->zero_copy && io->op == UFS_IO_WRITE)
		count_zc_write(rw, req, result);
	io->done(req, result);
}
