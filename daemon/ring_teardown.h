/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stopping the io_uring transport (ring_teardown.c).
 */
#ifndef UFS_RING_TEARDOWN_H
#define UFS_RING_TEARDOWN_H

struct ufs_daemon;
struct ufs_uring;

void uring_free(struct ufs_uring *u);
void uring_join(struct ufs_uring *u);

/* The transport's stop, for transport.c (uring.h starts it). */
void ufs_uring_stop(struct ufs_daemon *d);
/* Wake every ring worker so it sees d->stopping. */
void ufs_uring_force_stop(struct ufs_daemon *d);

#endif /* UFS_RING_TEARDOWN_H */
