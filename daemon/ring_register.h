/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Registering the entries in phases, and the start-up handshake between
 * ufs_uring_start() and the workers (ring_register.c).
 */
#ifndef UFS_RING_REGISTER_H
#define UFS_RING_REGISTER_H

#include "ring_types.h"

/* Returns 0, a REGISTER's error, or one of ring_conn_ended's (not logged). */
int ring_register_phase(struct ring_worker *rw, enum uring_setup_phase phase);
int uring_force_dev_fallback(int fuse_fd);
void uring_setup_report(struct ufs_uring *u, int error);
enum uring_setup_phase uring_setup_wait_phase(struct ufs_uring *u, enum uring_setup_phase done);
void uring_setup_wait_count(struct ufs_uring *u, unsigned int *count, unsigned int want);
unsigned int uring_started_workers(struct ufs_uring *u);
void uring_setup_set_phase(struct ufs_uring *u, enum uring_setup_phase phase);
int uring_setup_run_phase(struct ufs_uring *u, enum uring_setup_phase phase);

#endif /* UFS_RING_REGISTER_H */
