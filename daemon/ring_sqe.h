/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The SQEs of a worker's ring (ring_sqe.c).
 */
#ifndef UFS_RING_SQE_H
#define UFS_RING_SQE_H

#include "ring_types.h"

struct io_uring_sqe *ring_get_sqe(struct ring_worker *rw);
struct io_uring_sqe *ring_last_sqe(struct ring_worker *rw);
struct ufs_uring_cmd_req *ring_prep_fuse_cmd(struct io_uring_sqe *sqe, int fuse_fd,
					     enum ufs_uring_cmd op, uint16_t qid);
void ring_event_arm(struct ring_worker *rw);

#endif /* UFS_RING_SQE_H */
