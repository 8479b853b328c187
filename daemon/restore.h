/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A successor's start (handover.h): the daemon as the hand-over record left
 * it, in place of mount(2) and INIT.
 */
#ifndef UFS_RESTORE_H
#define UFS_RESTORE_H

#include <stddef.h>

struct ufs_daemon;

/* From what d->handover.inherit holds; why set on failure. */
int ufs_restore(struct ufs_daemon *d, char *why, size_t why_len);

#endif /* UFS_RESTORE_H */
