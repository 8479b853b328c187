// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The SQEs of a worker's ring: getting one whatever the ring's load, the
 * FUSE command SQE, the read of the worker's eventfd.
 */
#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "ring_sqe.h"

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
struct ufs_uring_cmd_req *ring_prep_fuse_cmd(struct io_uring_sqe *sqe, int fuse_fd,
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

void ring_event_arm(struct ring_worker *rw)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	io_uring_prep_read(sqe, rw->event_fd, &rw->event_value, sizeof(rw->event_value), 0);
	io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_EVENT));
}
