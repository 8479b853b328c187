/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE-over-io_uring transport.
 */
#ifndef UFS_URING_H
#define UFS_URING_H

#include <stdbool.h>

struct ufs_daemon;

/* Can this process create the rings the transport needs (SQE128)? */
bool ufs_uring_supported(void);

/*
 * Build the rings and register every queue.  Returns 0 once the ring is
 * ready, -EAGAIN if setup failed before any queue was registered (the
 * kernel then serves over /dev/fuse), or another error.
 */
int ufs_uring_start(struct ufs_daemon *d);
void ufs_uring_stop(struct ufs_daemon *d);
/* Wake every ring worker so it sees d->stopping. */
void ufs_uring_force_stop(struct ufs_daemon *d);

#endif /* UFS_URING_H */
