/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * copy_file_range without blocking a worker.
 *
 * A FUSE copy can take seconds (a byte copy of gigabytes) or microseconds
 * (a reflink).  Three ways to run one, chosen once at start-up
 * (copy_file_range = auto|ring|thread|sync):
 *  - ring: IORING_OP_COPY_FILE_RANGE on the worker's own ring, when the
 *    kernel has the (proposed) op and a behavioural self-test confirms it;
 *  - thread: a helper thread per worker runs the copy and the reply comes
 *    back through the worker's transport (its ring's eventfd);
 *  - sync: on the worker itself, only to compare.
 * Copies run in bounded chunks, so an INTERRUPT stops one early (a copy
 * still queued ends with EINTR, a running one with a short count) and the
 * old opcode's 32-bit reply always fits.
 */
#ifndef UFS_IO_COPY_H
#define UFS_IO_COPY_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "req.h"

/* Bytes per copy_file_range call or ring SQE. */
#define UFS_COPY_CHUNK (8u << 20)

struct ufs_worker;

/* The mode to use: ring only when ring_ok (the transport can and the self-test passed). */
enum ufs_cfr_mode ufs_copy_mode_resolve(enum ufs_cfr_mode configured, bool ring_ok);

/*
 * Probe the kernel for IORING_OP_COPY_FILE_RANGE and confirm it by copying
 * a few bytes between two memory files.  Returns 0 when confirmed, else a
 * negative errno with *why set.
 */
int ufs_copy_ring_selftest(const char **why);

/* Run req->io (UFS_IO_COPY) by thread or synchronously, per the daemon's mode. */
void ufs_copy_submit(struct ufs_req *req, enum ufs_cfr_mode mode);

/* The chunk of req->io (UFS_IO_COPY) the next call or SQE copies. */
size_t ufs_copy_next_len(const struct ufs_io *io);

/*
 * Track an in-flight copy so an INTERRUPT can find it.  cancel (optional)
 * stops a copy running somewhere else (the ring posts an ASYNC_CANCEL).
 */
void ufs_copy_track(struct ufs_req *req, void (*cancel)(struct ufs_req *req));
/* The copy is finished: untrack it; returns true if it was cancelled. */
bool ufs_copy_untrack(struct ufs_req *req);
bool ufs_copy_cancelled(struct ufs_req *req);
/* Count and reply a finished copy; EINTR when cancelled before any byte moved. */
void ufs_copy_finish(struct ufs_req *req, ssize_t res);
/* Give a copy that runs on a ring its registry entry. */
int ufs_copy_track_ring(struct ufs_req *req, void (*cancel)(struct ufs_req *req));

/* INTERRUPT: cancel the copy serving request unique, if there is one. */
bool ufs_copy_interrupt(uint64_t unique);

/* The connection ended: cancel every copy; then wait until all have replied. */
void ufs_copy_interrupt_all(void);
void ufs_copy_wait_idle(void);

/* Stop a worker's helper thread (after its transport stopped). */
void ufs_copier_stop(struct ufs_worker *w);

#endif /* UFS_IO_COPY_H */
