/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * copy_file_range without blocking a worker: the copy room.
 *
 * A FUSE copy can take seconds (a byte copy of gigabytes) or microseconds
 * (a reflink).  Everything about running one is decided here, for both
 * transports: how (copy_file_range = auto|ring|thread|sync, chosen once at
 * start-up), when (each worker runs one copy at a time; the others wait
 * their turn in its lane), in which pieces (UFS_COPY_CHUNK bytes per call
 * or SQE, so an INTERRUPT stops one early and the old opcode's 32-bit
 * reply always fits) and how it stops (an INTERRUPT finds it in the
 * registry: a copy still waiting ends with EINTR, a running one with a
 * short count).  The ways to run a chunk:
 *  - ring: IORING_OP_COPY_FILE_RANGE on the worker's own ring, when the
 *    kernel has the (proposed) op and a behavioural self-test confirms it;
 *    the room submits it as the request's I/O through its transport
 *    (xops->io_submit) and stops it with xops->io_cancel;
 *  - thread: copy_file_range(2) on a helper thread per worker, the reply
 *    going back through the worker's transport;
 *  - sync: on the worker itself, only to compare.
 *
 * A copy enters the room once, from its handler (ufs_copy_start), and
 * leaves it with its reply: the room owns the request until then.
 */
#ifndef UFS_COPY_H
#define UFS_COPY_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "req.h"

/* Bytes per copy_file_range call or ring SQE. */
#define UFS_COPY_CHUNK (8u << 20)

struct ufs_interrupts;
struct ufs_worker;

/* The daemon's copies. */
struct ufs_copies {
	enum ufs_cfr_mode mode;		/* set before the workers start, then read-only */
	struct ufs_interrupts *early;	/* INTERRUPTs that came before their copy */
	pthread_mutex_t lock;		/* protects jobs; taken before a lane's lock */
	struct ufs_copy_job *jobs;	/* every copy in flight, for INTERRUPT */
	int active;			/* copies not replied yet; atomic */
};

void ufs_copies_init(struct ufs_copies *c, struct ufs_interrupts *early);
void ufs_copies_destroy(struct ufs_copies *c);

/*
 * Run the copy req->io describes (UFS_IO_COPY: fd, off, fd_in, off_in,
 * len, mode) and reply through req->io.done with the bytes copied or an
 * errno.  The handler then returns -UFS_EQUEUED.
 */
void ufs_copy_start(struct ufs_copies *c, struct ufs_req *req);

/* INTERRUPT: stop the copy serving request unique; false if there is none. */
bool ufs_copy_interrupt(struct ufs_copies *c, uint64_t unique);

/* The connection ended: stop every copy; then wait until all have replied. */
void ufs_copy_interrupt_all(struct ufs_copies *c);
void ufs_copy_wait_idle(struct ufs_copies *c);

/*
 * Free a worker's lane and stop its helper thread, once every copy has
 * replied (ufs_copy_wait_idle) and the worker serves no more requests.
 */
void ufs_copy_lane_free(struct ufs_worker *w);

#endif /* UFS_COPY_H */
