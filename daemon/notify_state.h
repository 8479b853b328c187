/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What systemd asked for, read from the environment at start-up
 * (ufs_notify_init, notify.c), then read-only.  A header of its own because
 * struct ufs_daemon (daemon.h, which the transports see) holds it, while
 * notify.c's calls are the start-up tier's (notify.h).
 */
#ifndef UFS_NOTIFY_STATE_H
#define UFS_NOTIFY_STATE_H

#include <stdbool.h>
#include <stdint.h>

/* Read from the environment at start-up, then read-only. */
struct ufs_notify {
	bool enabled;			/* NOTIFY_SOCKET is set */
	bool journal;			/* stderr is the journal (JOURNAL_STREAM) */
	uint64_t watchdog_usec;		/* WATCHDOG_USEC for this process, 0: none */
};

#endif /* UFS_NOTIFY_STATE_H */
