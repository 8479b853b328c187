/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount's own flags (remount.c): mount -o remount changes them in the
 * kernel and starts no daemon; nosymfollow is set on a new mount.
 */
#ifndef UFS_REMOUNT_H
#define UFS_REMOUNT_H

#include "config.h"

/*
 * Remount the uringfs mount at mountpoint with the mount flags optstr's
 * words make (the whole new set, as mount(8) passes it): the exit status,
 * errors in one line on stderr.
 */
int ufs_remount(const char *mountpoint, const char *optstr);

/*
 * Set nosymfollow on the uringfs mount just made at real (its connection
 * conn_id): 0 or a negative errno with err set.
 */
int ufs_remount_nosymfollow(const char *real, unsigned int conn_id, struct ufs_config_error *err);

#endif /* UFS_REMOUNT_H */
