/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The main thread while the mount serves: signals, the workers' news,
 * systemd status, a take-over, the unmount grace period.
 */
#ifndef UFS_LOOP_H
#define UFS_LOOP_H

#include <signal.h>

struct ufs_daemon;

/* The main thread until every worker has seen the connection end. */
void ufs_main_loop(struct ufs_daemon *d, const sigset_t *sigs, int listen_fd);
/*
 * After the loop: the connection ended with nobody unmounting (the kernel
 * aborted it): logged, the dead mount detached.  Returns the daemon's error.
 */
int ufs_main_loop_end(struct ufs_daemon *d);

#endif /* UFS_LOOP_H */
