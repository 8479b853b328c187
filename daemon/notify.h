/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd: Type=notify readiness, STATUS= and the watchdog.  Every call is a
 * no-op when the daemon was not started by systemd (no NOTIFY_SOCKET).
 */
#ifndef UFS_NOTIFY_H
#define UFS_NOTIFY_H

#include <stdbool.h>

#include "notify_state.h"

struct ufs_daemon;

void ufs_notify_init(struct ufs_notify *n);
bool ufs_notify_under_systemd(const struct ufs_notify *n);
/* READY=1 with the first STATUS=; call once the mount serves requests. */
void ufs_notify_ready(struct ufs_daemon *d);
/* Refresh STATUS= (and pet the watchdog). */
void ufs_notify_status(struct ufs_daemon *d);
void ufs_notify_stopping(const struct ufs_notify *n);
/*
 * SIGTERM does not say why: is systemd restarting this service (a
 * restart job for its unit), rather than stopping it?  Asked over D-Bus
 * (systemd's private socket as root, else the system bus); false when
 * not under systemd or when it cannot be asked.
 */
bool ufs_notify_restart_pending(const struct ufs_notify *n);
/* A successor started by ExecReload= is the service's main process now. */
void ufs_notify_main_pid(const struct ufs_notify *n);
/* STATUS= of a successor that cannot serve the mount it inherited. */
void ufs_notify_not_serving(const struct ufs_notify *n, const char *why);
/* How often the main loop should call ufs_notify_status, or -1. */
int ufs_notify_interval_ms(const struct ufs_notify *n);

#endif /* UFS_NOTIFY_H */
