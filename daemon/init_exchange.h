/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The INIT exchange on /dev/fuse: read INIT, negotiate (init_negotiate.c),
 * check it against what the settings demand, reply.
 */
#ifndef UFS_INIT_EXCHANGE_H
#define UFS_INIT_EXCHANGE_H

struct ufs_daemon;

/*
 * 0 or a negative errno, logged; but -ENOTCONN, not logged: the connection
 * ended before INIT was answered (main.c tells an unmount from an abort).
 */
int ufs_init_exchange(struct ufs_daemon *d);

#endif /* UFS_INIT_EXCHANGE_H */
