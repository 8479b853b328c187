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
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dispatch.h"
#include "io.h"
#include "io_copy.h"
#include "log.h"
#include "uring_i.h"

/* A zero-copied request whose data moves straight between file and slot. */
static bool io_direct_zc(const struct ufs_req *req)
{
	return req->zero_copy && !req->io.bounce;
}

static void prep_copy_file_range(struct io_uring_sqe *sqe, const struct ufs_io *io)
{
	/* The proposed opcode, packed like splice (see io_copy.h). */
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UFS_IORING_OP_COPY_FILE_RANGE;
	sqe->fd = io->fd;
	sqe->off = io->off + io->done_bytes;
	sqe->splice_fd_in = io->fd_in;
	sqe->splice_off_in = io->off_in + io->done_bytes;
	sqe->len = ufs_copy_next_len(io);
	/* copy_file_range(2) takes no flags; splice_flags is SPLICE_F_FD_IN_FIXED's field. */
	sqe->splice_flags = 0;
}

/* The bounced WRITE's first step: the client's pages into the bounce region. */
static void prep_bounce_in(struct ring_worker *rw, struct ring_ent *ent, struct io_uring_sqe *sqe)
{
	io_uring_prep_write_fixed(sqe, rw->bounce_fd, NULL, ent->req.io.len,
				  (uint64_t)ent->idx * rw->u->max_payload, ent->slot);
}

static void ring_io_prep(struct ring_worker *rw, struct ufs_req *req)
{
	struct ring_ent *ent = ring_req_to_ent(req);
	struct ufs_io *io = &req->io;
	struct io_uring_sqe *sqe = ring_get_sqe(rw);
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
		else if (req->zero_copy && !ent->zc_bounced)
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
	io_uring_sqe_set_data(sqe, ring_tag(req, RING_TAG_IO));
	rw->ios_inflight++;
}

/*
 * INTERRUPT of a copy on this ring (called with the copy registry locked,
 * from the /dev/fuse reader): the worker itself must cancel it.
 */
static void ring_copy_cancel(struct ufs_req *req)
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
 * A ring copy is always punted to io-wq, where the READs and WRITEs of
 * files without non-blocking I/O (tmpfs) go too.  With every client's copy
 * in flight at once they wait behind the copies (the probe benchmark saw
 * 100 ms), so a worker runs this many copies on its ring, as thread mode
 * runs one helper per worker; the others wait in line here, where an
 * INTERRUPT takes them out with EINTR.
 */
#define RING_COPIES_RUNNING 1

static void ring_copy_wait(struct ring_worker *rw, struct ring_ent *ent)
{
	ent->copy_next = NULL;
	ent->copy_waiting = true;
	if (rw->copy_wait_tail)
		rw->copy_wait_tail->copy_next = ent;
	else
		rw->copy_wait_head = ent;
	rw->copy_wait_tail = ent;
}

static void ring_copy_unwait(struct ring_worker *rw, struct ring_ent *ent)
{
	struct ring_ent **pp = &rw->copy_wait_head, *prev = NULL;

	while (*pp != ent) {
		prev = *pp;
		pp = &(*pp)->copy_next;
	}
	*pp = ent->copy_next;
	if (rw->copy_wait_tail == ent)
		rw->copy_wait_tail = prev;
	ent->copy_waiting = false;
}

/* Start waiting copies while there is room; cancelled ones end with EINTR. */
static void ring_copy_start_waiting(struct ring_worker *rw)
{
	while (rw->copy_wait_head && rw->copies_running < RING_COPIES_RUNNING) {
		struct ring_ent *ent = rw->copy_wait_head;

		ring_copy_unwait(rw, ent);
		if (ufs_copy_cancelled(&ent->req)) {
			ufs_copy_finish(&ent->req, 0);
			continue;
		}
		rw->copies_running++;
		ring_io_prep(rw, &ent->req);
	}
}

/* ASYNC_CANCEL the copy SQE of each cancel still about its request. */
void ring_cancels_submit(struct ring_worker *rw, struct ring_cancel *c)
{
	while (c) {
		struct ring_cancel *next = c->next;
		struct ring_ent *ent = ring_req_to_ent(c->req);

		if (ent->state == RING_ENT_SERVING && c->req->copy &&
		    ((struct fuse_in_header *)ent->hdr->in_out)->unique == c->unique) {
			if (ent->copy_waiting) {
				ring_copy_unwait(rw, ent);
				ufs_copy_finish(c->req, 0);	/* never started: EINTR */
			} else {
				struct io_uring_sqe *sqe = ring_get_sqe(rw);

				io_uring_prep_cancel(sqe, ring_tag(c->req, RING_TAG_IO), 0);
				io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_SETUP));
			}
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
	ent->zc_bounced = false;
	if (req->io.op == UFS_IO_COPY) {
		/* Without the ring opcode: the worker's helper thread, or inline. */
		if (rw->u->d->cfr != UFS_CFR_RING) {
			ufs_copy_submit(req, rw->u->d->cfr);
			return;
		}
		if (ufs_copy_track_ring(req, ring_copy_cancel)) {
			req->io.done(req, -ENOMEM);
			return;
		}
		if (ufs_copy_cancelled(req)) {
			ufs_copy_finish(req, 0);	/* interrupted before it started */
			return;
		}
		if (rw->copies_running >= RING_COPIES_RUNNING) {
			ring_copy_wait(rw, ent);
			return;
		}
		rw->copies_running++;
	}
	/* A bounced WRITE writes the backing file from the bounce region. */
	if (req->zero_copy && req->io.op == UFS_IO_WRITE && req->io.bounce)
		req->io.buf = ring_ent_bounce(rw, ent);
	ent->zc_in_slot = req->zero_copy && req->io.op == UFS_IO_READ && !req->io.bounce;
	ring_io_prep(rw, req);
}

/* A chunk of a ring copy completed: the next one, or the reply. */
static void ring_copy_complete(struct ring_worker *rw, struct ufs_req *req, int res)
{
	struct ufs_io *io = &req->io;

	if (res > 0)
		io->done_bytes += res;
	if (res > 0 && io->done_bytes < io->len && !ufs_copy_cancelled(req)) {
		ring_io_prep(rw, req);
		return;
	}
	/* -ECANCELED: an ASYNC_CANCEL caught it before it ran. */
	ufs_copy_finish(req, io->done_bytes ? (ssize_t)io->done_bytes :
			(res < 0 && res != -ECANCELED ? res : 0));
	rw->copies_running--;
	ring_copy_start_waiting(rw);
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
	if (io->op == UFS_IO_COPY) {
		ring_copy_complete(rw, req, res);
		return;
	}
	if (io->op != UFS_IO_READ && io->op != UFS_IO_WRITE) {
		io->done(req, result);
		return;
	}
	if (req->zero_copy && io->op == UFS_IO_WRITE && io->bounce && !ent->zc_bounced) {
		/* The bytes are in the bounce region: now write them out. */
		if (res != (int)io->len) {
			io->done(req, res < 0 ? res : -EIO);
			return;
		}
		ent->zc_bounced = true;
		ring_io_prep(rw, req);
		return;
	}
	if (res == -EAGAIN) {
		/* A file that would block: retry from io-wq, where it may. */
		ring_io_prep(rw, req);
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

/* ---- zero copy: the slot table, the bounce memory, the reply ---- */

/*
 * A sparse buffer table with one slot per entry, spares included, and the
 * bounce memory file.  Slot 0 stays empty: index 0 means "none" at REGISTER.
 */
int ring_zc_setup(struct ring_worker *rw)
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

void ring_zc_teardown(struct ring_worker *rw)
{
	if (rw->bounce)
		munmap(rw->bounce, rw->bounce_len);
	if (rw->bounce_fd >= 0)
		close(rw->bounce_fd);
	rw->bounce = NULL;
	rw->bounce_fd = -1;
}

static void count_zc_read(struct ring_worker *rw, struct ring_ent *ent, size_t len)
{
	struct ufs_stats *st = &rw->w->stats;

	if (!ent->zc_in_slot) {
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
	if (ent->zc_in_slot)
		return false;
	sqe = ring_get_sqe(rw);
	io_uring_prep_read_fixed(sqe, rw->bounce_fd, NULL, len,
				 (uint64_t)ent->idx * rw->u->max_payload, ent->slot);
	io_uring_sqe_set_data(sqe, ring_tag(ent, RING_TAG_SLOT));
	ent->zc_len = len;
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
	ent->zc_in_slot = true;
	ring_commit(rw, ent, 0, (size_t)res < ent->zc_len ? (size_t)res : ent->zc_len);
}
