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
 * (record.h, restore.c; the rings' memory: ring_keep.c) and asks the kernel
 * to send again what the old daemon read but never answered.
 *
 * Where it lives (all under the name handover_):
 *  - handover.h: this overview and the hand-over's state (types only: struct
 *    ufs_daemon holds it, and the transports take the inherited clones and
 *    rings from it);
 *  - handover_start.c: a successor's start, as main.c calls it (--take-over's
 *    request and the record's SOURCE and -o, the rings mapped back, the
 *    restore), and what it inherited until it is taken or released;
 *  - handover_socket.c: the take-over socket, both ends;
 *  - handover_fdstore.c: systemd's file descriptor store;
 *  - handover_status.c: why a mount is not served (the status file), and the
 *    runtime directory the socket and that file live in.
 */
#ifndef UFS_HANDOVER_H
#define UFS_HANDOVER_H

#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

#include "fs_lock.h"

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
	/* take-over: POSIX lock owners' descriptions (fs_lock.h); fd -1 once restored */
	struct ufs_lock_owner_state *locks;
	uint32_t nlocks, locks_cap;
};

/*
 * The hand-over's part of the daemon (d->handover).  Only the main thread
 * touches it (start-up, the main loop, a take-over served from the main
 * loop), so it has no lock; the workers never see it.  The transports take
 * the inherited clones and rings out of inherit during start-up, on the
 * main thread, before any worker runs.
 */
struct ufs_handover {
	struct ufs_inherit inherit;	/* what a predecessor left, until restored */
	/*
	 * --take-over without SOURCE: the predecessor's, from its record
	 * (d->source points here then).
	 */
	char source[PATH_MAX];
	ino_t takeover_ino;		/* our take-over socket's file (handover_socket.c) */
	/* kept to let a successor in to hear why when out of descriptors, or -1 */
	int spare_fd;
	/* handover_fdstore.c: what this daemon put in systemd's store */
	bool stored_fuse;		/* the connection is in systemd's store */
	unsigned int stored_dev, stored_ring;	/* dev-N, ring-N in systemd's store */
};

#endif /* UFS_HANDOVER_H */
