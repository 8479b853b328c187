/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * systemd: Type=notify readiness, STATUS= and the watchdog.  Every call is a
 * no-op when the daemon was not started by systemd (no NOTIFY_SOCKET).
 */
#ifndef UFS_NOTIFY_H
#define UFS_NOTIFY_H

#include <stdbool.h>

struct ufs_daemon;

void ufs_notify_init(void);
bool ufs_notify_under_systemd(void);
/* READY=1 with the first STATUS=; call once the mount serves requests. */
void ufs_notify_ready(struct ufs_daemon *d);
/* Refresh STATUS= (and pet the watchdog). */
void ufs_notify_status(struct ufs_daemon *d);
void ufs_notify_stopping(void);
/* How often the main loop should call ufs_notify_status, or -1. */
int ufs_notify_interval_ms(void);

#endif /* UFS_NOTIFY_H */
