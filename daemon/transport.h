/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Choosing, starting and stopping the transport (transport.c).
 */
#ifndef UFS_TRANSPORT_H
#define UFS_TRANSPORT_H

#include "daemon.h"

/*
 * The io_uring transport with a /dev/fuse reader beside it, or /dev/fuse
 * alone.  -ENOTCONN: the connection ended while the ring registered (not
 * logged: main.c tells an unmount from an abort).
 */
int ufs_transport_start(struct ufs_daemon *d);
/* After the connection ended: helper threads, then the workers. */
void ufs_transport_stop(struct ufs_daemon *d);
/* End the connection without fusectl: every worker closes its descriptor. */
void ufs_transport_force_stop(struct ufs_daemon *d);
/* Start-up failed after some workers started: unmount, and wait for them. */
void ufs_transport_abandon(struct ufs_daemon *d);


/* ---- hand-over ---- */

/* Park every worker between requests; 0, or why not. */
int ufs_transport_pause(struct ufs_daemon *d, int timeout_ms, char *why, size_t why_len);
void ufs_transport_resume(struct ufs_daemon *d);
/* The successor serves: parked workers leave quietly. */
void ufs_transport_handed_over(struct ufs_daemon *d);
/* The clones of the connection that may hold requests read and unanswered. */
unsigned int ufs_transport_clone_fds(struct ufs_daemon *d, int *fds, unsigned int max);
/* The memory files of the rings (their buffers, held requests and records). */
unsigned int ufs_transport_ring_fds(struct ufs_daemon *d, int *fds, unsigned int max);
/*
 * A successor's first word once its predecessor is gone: what nobody
 * answered comes again (RESEND over /dev/fuse; over io_uring the held
 * entries are adopted and each queue is woken).
 */
int ufs_transport_resend(struct ufs_daemon *d);

#endif /* UFS_TRANSPORT_H */
