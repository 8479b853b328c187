/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The mount's own flags (remount.c): mount -o remount changes them in the
 * kernel and starts no daemon (a new mount's nosymfollow: mount.c).
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

#endif /* UFS_REMOUNT_H */
