/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The take-over socket (handover.h), both ends: the running daemon listens
 * and hands everything over; a successor asks for it and says how it went.
 */
#ifndef UFS_HANDOVER_SOCKET_H
#define UFS_HANDOVER_SOCKET_H

#include <stdbool.h>
#include <stddef.h>

#include "handover.h"

struct ufs_daemon;

/* ---- the running daemon ---- */

/* The socket successors connect to, or -1 (logged); for the main loop's poll. */
int ufs_handover_listen(struct ufs_daemon *d);
/* Close it, and remove its name unless a successor has bound it since. */
void ufs_handover_unlisten(struct ufs_daemon *d, int fd);
/*
 * A successor knocked on the socket: hand everything over.  Returns true
 * when it took the mount (the caller exits without unmounting), false when
 * it failed and this daemon serves on.
 */
bool ufs_handover_serve(struct ufs_daemon *d, int listen_fd);

/* ---- the successor ---- */

/* Might a daemon of this user serve the mount at real?  False only when its socket is dead. */
bool ufs_handover_served(const char *real);

/*
 * --take-over: ask the daemon serving mountpoint for its descriptors.
 * Returns 0, or a negative errno with a one-line reason in why.
 */
int ufs_handover_request(const char *mountpoint, struct ufs_inherit *in, char *why,
			 size_t why_len);
/*
 * Tell the old daemon how it went (why: NULL if this daemon serves now)
 * and, on success, wait until it has gone: only then may what it read and
 * never answered be sent again.
 */
void ufs_handover_finish(struct ufs_inherit *in, const char *why);
/*
 * ufs_handover_finish(in, NULL) for a successor whose workers serve: the
 * wait also ends once *running (its workers running) is 0, as after an
 * unmount nothing is left to send again and the daemon must exit.
 */
void ufs_handover_finish_serving(struct ufs_inherit *in, const int *running);

#endif /* UFS_HANDOVER_SOCKET_H */
