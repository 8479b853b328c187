/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Setting up the io_uring transport (ring_setup.c): queues dealt to the
 * workers, each worker's ring, memory, kernel queues and entries.
 */
#ifndef UFS_RING_SETUP_H
#define UFS_RING_SETUP_H

#include "ring_types.h"

int uring_alloc(struct ufs_daemon *d, struct ufs_uring **out);
int uring_assign_queues(struct ufs_uring *u);
void uring_share_queues(struct ufs_uring *u);
int ring_build(struct ring_worker *rw);

#endif /* UFS_RING_SETUP_H */
