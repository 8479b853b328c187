/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Slow requests: a thread that logs, once, each request in flight longer
 * than slow_request_ms, and the in-flight list of the control file (read
 * from the workers' in-flight tables, inflight.h).
 */
#ifndef UFS_SLOW_H
#define UFS_SLOW_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct ufs_daemon;

/* After the workers start; nothing when slow_request_ms is 0. */
void ufs_slow_watch_start(struct ufs_daemon *d);
void ufs_slow_watch_stop(struct ufs_daemon *d);
/*
 * "inflight_requests N" and "inflight_oldest_ms N" (all requests: gauges of
 * the mount), then one line
 * "inflight OPCODE unique=N nodeid=N pid=N uid=N age_ms=N" per request in
 * flight, oldest first, with what it waits for if parked on a wait thread
 * (" waiting=lock", " waiting=lease").  The control file's own opens (the
 * one taking this snapshot) are left out.  Unless all, only uid's requests
 * are listed, after "inflight_withheld N": how many of other users' were not.
 */
void ufs_slow_inflight_text(struct ufs_daemon *d, FILE *f, bool all, uid_t uid);

#endif /* UFS_SLOW_H */
