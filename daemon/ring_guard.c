// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A ring worker's exit guard: the worker thread's idle entries must be gone
 * from the kernel before the thread is, so that a call made after a crash
 * waits for the successor instead of being given to a dead entry.
 *
 * What the kernel does when a ring worker's thread dies (io_uring/cancel.c,
 * fs/fuse/dev_uring.c; 6.14 to 7.3):
 * - do_exit() calls io_uring_files_cancel(), which cancels the thread's
 *   requests only while it has "tracked" ones in flight
 *   (io_uring_cancel_generic(): tctx->inflight_tracked).  A FUSE command is
 *   never tracked, so without more the thread's idle entries (AVAILABLE)
 *   outlive it;
 * - they go only when the ring's last reference goes: io_uring_release()
 *   queues io_ring_exit_work() on a workqueue, which cancels them
 *   (fuse_uring_cancel) some time after the process was reaped, never if
 *   another process holds the ring (pidfd_getfd, a debugger);
 * - a request that arrives meanwhile is given to such an entry; its
 *   delivery is task work of a dead task, run with tw.cancel set, and
 *   fuse_uring_send_in_task() ends the request with ECANCELED.
 * A private FUTEX_WAIT is tracked (io_futex_wait_prep), so one in flight on
 * each ring makes the thread's own exit cancel every idle entry of its
 * rings, synchronously, before the process can be reaped; it also runs the
 * deliveries already in its task work first, into the ring memory the
 * successor maps back.  Nobody wakes the futex: the exit or the ring's
 * teardown cancels it.
 */
#include <errno.h>
#include <liburing.h>
#include <linux/futex.h>
#include <string.h>

#include "log.h"
#include "ring_guard.h"
#include "ring_sqe.h"

/* Not in every liburing's headers; the kernel's numbers since 6.7. */
#define UFS_IORING_OP_FUTEX_WAIT 51
#define UFS_FUTEX2_SIZE_U32 0x02
#define UFS_FUTEX2_PRIVATE FUTEX_PRIVATE_FLAG

void ring_exit_guard_arm(struct ring_worker *rw)
{
	struct io_uring_sqe *sqe = ring_get_sqe(rw);

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UFS_IORING_OP_FUTEX_WAIT;
	sqe->fd = UFS_FUTEX2_SIZE_U32 | UFS_FUTEX2_PRIVATE; /* futex2 flags */
	sqe->addr = (uintptr_t)&rw->exit_guard;
	sqe->off = 0; /* waits while the word is 0: always */
	sqe->addr3 = FUTEX_BITSET_MATCH_ANY;
	io_uring_sqe_set_data(sqe, ring_tag(rw, RING_TAG_GUARD));
}

void ring_exit_guard_done(struct ring_worker *rw, int res)
{
	if (res == -ECANCELED || __atomic_load_n(&rw->u->d->stopping, __ATOMIC_ACQUIRE))
		return; /* the ring's teardown */
	if (res == 0 || res == -EAGAIN || res == -EINTR) {
		ring_exit_guard_arm(rw); /* a stray wake-up */
		return;
	}
	if (!rw->exit_guard_warned)
		ufs_warn("worker %u: no io_uring exit guard (FUTEX_WAIT: %s): a call made just "
			 "after a crash may fail with ECANCELED",
			 rw->w->id, strerror(-res));
	rw->exit_guard_warned = true;
}
