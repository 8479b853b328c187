// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * INTERRUPT: the request it names is stopped if it is a long wait (wait.c)
 * or a copy (copy.c), and remembered (interrupt.c) in case that request has
 * not got there yet.
 */
#include "copy.h"
#include "fs.h"
#include "interrupt.h"
#include "log.h"
#include "wait.h"
#include "worker.h"

ssize_t ufs_op_interrupt(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_interrupt_in *in = req->args.op;

	if (req->worker)
		ufs_stat_add(&req->worker->stats.interrupts, 1);
	/*
	 * Lock waits and copies can be abandoned; anything else finishes
	 * quickly and its reply answers the interrupt.  The request may still
	 * be on its way to the wait or copy it becomes (another worker, or the
	 * ring, delivered it): remember the INTERRUPT first and look second,
	 * while a wait or copy shows itself first and claims second.  Any
	 * interleaving then cancels it; looking first could miss a request
	 * that registered and claimed in between.
	 */
	ufs_interrupt_remember(&fs->interrupts, in->unique);
	ufs_debug_pause("interrupt");
	if (ufs_wait_interrupt(&fs->waits, in->unique) ||
	    ufs_copy_interrupt(&fs->copies, in->unique))
		ufs_interrupt_claim(&fs->interrupts, in->unique);	/* the record is not needed */
	return 0;
}
