/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A successor's start (handover.h), as main.c calls it, and what it
 * inherited until the transports and the restore take it or it is released.
 */
#ifndef UFS_HANDOVER_START_H
#define UFS_HANDOVER_START_H

#include <stddef.h>

#include "handover.h"

struct ufs_daemon;

/* Nothing inherited yet: every descriptor -1. */
void ufs_inherit_init(struct ufs_inherit *in);
/* Close whatever was not taken. */
void ufs_inherit_release(struct ufs_inherit *in);

/* d->handover as nothing inherited; first thing in main. */
void ufs_handover_init(struct ufs_daemon *d);

/*
 * --take-over: the running daemon's descriptors, and its SOURCE (copied
 * into d->handover.source) and -o (into settings, settings_len bytes) where
 * the command line gives none.  0, or -1 with the reason on stderr.
 */
int ufs_handover_take_over(struct ufs_daemon *d, char *settings, size_t settings_len);

/*
 * The predecessor's ring memory back at its addresses, first thing: later
 * mappings (the record, threads' stacks) could take them.  0, or -1 (logged,
 * the predecessor told).
 */
int ufs_handover_map(struct ufs_daemon *d);

/*
 * A live connection from a predecessor: restore (before detaching, so that
 * relative paths hold and the reason for a refusal reaches the terminal),
 * then detach (ready_fd: process.c's).  0 or a negative errno.
 */
int ufs_handover_start(struct ufs_daemon *d, const char *settings, int *ready_fd);

/*
 * The successor's transport has started: tell the predecessor, which then
 * exits (an ExecReload= successor first becomes the service's main
 * process), and have the kernel send again what it read and never
 * answered.  ready_fd as for ufs_handover_start (-1 once used).
 */
void ufs_handover_serving(struct ufs_daemon *d, int *ready_fd);

#endif /* UFS_HANDOVER_START_H */
