/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * mount -o remount (remount.c): the mount's flags change in the kernel; no
 * daemon starts.
 */
#ifndef UFS_REMOUNT_H
#define UFS_REMOUNT_H

#include <stdbool.h>

/* Is "remount" among the comma-separated words of optstr? */
bool ufs_remount_asked(const char *optstr);

/* Remount mountpoint with the mount flags named in optstr: the exit status (errors on stderr). */
int ufs_remount(const char *mountpoint, const char *optstr);

#endif /* UFS_REMOUNT_H */
