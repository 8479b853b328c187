/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Choosing, starting and stopping the transport (transport.c).
 */
#ifndef UFS_TRANSPORT_H
#define UFS_TRANSPORT_H

#include "daemon.h"

/* The io_uring transport with a /dev/fuse reader beside it, or /dev/fuse alone. */
int ufs_transport_start(struct ufs_daemon *d);
/* After the connection ended: helper threads, then the workers. */
void ufs_transport_stop(struct ufs_daemon *d);
/* End the connection without fusectl: every worker closes its descriptor. */
void ufs_transport_force_stop(struct ufs_daemon *d);
/* Start-up failed after some workers started: unmount, and wait for them. */
void ufs_transport_abandon(struct ufs_daemon *d);

#endif /* UFS_TRANSPORT_H */
