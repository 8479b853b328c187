/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Backing-file I/O on the worker's ring (ring_io.c).
 */
#ifndef UFS_RING_IO_H
#define UFS_RING_IO_H

#include "ring_types.h"

void ring_io_submit(struct ufs_req *req);
void ring_io_cancel(struct ufs_req *req);
void ring_cancels_submit(struct ring_worker *rw, struct ring_cancel *c);
void ring_io_complete(struct ring_worker *rw, struct ufs_req *req, int res);

#endif /* UFS_RING_IO_H */
