/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd's file descriptor store (handover.h): notify.c speaks to systemd
 * otherwise; this puts the connection in and reads it back.
 */
#ifndef UFS_HANDOVER_FDSTORE_H
#define UFS_HANDOVER_FDSTORE_H

#include "handover.h"

struct ufs_daemon;

/* LISTEN_FDS with the names this daemon stores: the connection to carry on. */
int ufs_fdstore_inherit(struct ufs_inherit *in);
/* Put the connection and the record in the store, once serving. */
void ufs_fdstore_keep(struct ufs_daemon *d);
/* Take them out again: the mount is going away. */
void ufs_fdstore_forget(struct ufs_daemon *d);

#endif /* UFS_HANDOVER_FDSTORE_H */
