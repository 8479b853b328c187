/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The synchronous I/O engine: runs a request's struct ufs_io with system
 * calls on the calling thread.  The /dev/fuse transport uses it for every
 * request; the io_uring transport for what its ring cannot do.
 */
#ifndef UFS_IO_H
#define UFS_IO_H

#include <sys/types.h>

#include "req.h"

/* Runs req->io to completion (short transfers continued) and calls its done. */
void ufs_io_run_sync(struct ufs_req *req);

/*
 * Continue a transfer after res bytes: returns true when the I/O is
 * finished (all done, EOF, or an error), with *res_out the final result.
 */
bool ufs_io_progress(struct ufs_io *io, ssize_t res, ssize_t *res_out);

#endif /* UFS_IO_H */
