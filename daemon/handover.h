/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Handing a live mount to a successor, without unmounting.
 *
 * Two ways the connection's descriptors reach the next daemon:
 *  - take-over: `uringfs --take-over MOUNTPOINT` asks the running daemon
 *    over a Unix socket; it stops serving at a clean point, sends every
 *    descriptor (SCM_RIGHTS) and exits once the successor serves, or serves
 *    on if the successor fails;
 *  - systemd's file descriptor store: the daemon puts the connection and its
 *    hand-over record there when it starts serving; after a crash, a stop
 *    for a restart or an upgrade, systemd gives them to the next start
 *    (LISTEN_FDS), which finds the record and carries on.
 * Either way the successor restores the daemon from the hand-over record
 * (record.h, restore.c) and asks the kernel to send again what the old
 * daemon read but never answered.
 */
#ifndef UFS_HANDOVER_H
#define UFS_HANDOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_daemon;

#define UFS_INHERIT_DEV_MAX 1024	/* /dev/fuse clones: one per worker, and the reader */
#define UFS_INHERIT_RING_MAX 512	/* rings' memory files: one per worker, and older ones */

enum ufs_inherit_from {
	UFS_INHERIT_NONE,		/* mount afresh */
	UFS_INHERIT_TAKEOVER,		/* from the running daemon, by its socket */
	UFS_INHERIT_FDSTORE,		/* from systemd's file descriptor store */
};

/* What a successor inherits; the descriptors are its own until restored or closed. */
struct ufs_inherit {
	enum ufs_inherit_from from;
	int conn;			/* take-over: the socket to the old daemon, else -1 */
	pid_t predecessor;		/* take-over: its pid */
	int fuse_fd;			/* the connection */
	int record_fd;			/* the hand-over record */
	int dev_fds[UFS_INHERIT_DEV_MAX];	/* clones that may hold unanswered requests */
	unsigned int ndev;
	int ring_fds[UFS_INHERIT_RING_MAX];	/* rings' memory: mapped back where it was */
	unsigned int nring;
	bool ring_mapped;		/* ufs_uring_inherit_map() did */
	int *file_fds;			/* take-over: backing descriptors by fh index, -1: none */
	uint32_t nfile_fds;
};

void ufs_inherit_init(struct ufs_inherit *in);
/* Close whatever was not taken. */
void ufs_inherit_release(struct ufs_inherit *in);

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
 * Why nobody serves a mount: a successor that could not start leaves a
 * line for `uringfs --stats` (which must not touch the mount then), and the
 * daemon that serves it again takes it away (why NULL).
 */
void ufs_handover_status(const char *real, const char *why);
int ufs_handover_status_read(const char *mountpoint, char *buf, size_t len);

/* ---- systemd's file descriptor store (notify.c sends, this reads) ---- */

/* LISTEN_FDS with the names this daemon stores: the connection to carry on. */
int ufs_fdstore_inherit(struct ufs_inherit *in);
/* Put the connection and the record in the store, once serving. */
void ufs_fdstore_keep(struct ufs_daemon *d);
/* Take them out again: the mount is going away. */
void ufs_fdstore_forget(struct ufs_daemon *d);

#endif /* UFS_HANDOVER_H */
