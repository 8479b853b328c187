// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sd_notify(3) messages.
 */
#include <stdint.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "notify.h"

#define STATUS_INTERVAL_MS 10000

static bool notify_enabled;
static uint64_t watchdog_usec;

void ufs_notify_init(void)
{
	notify_enabled = getenv("NOTIFY_SOCKET") != NULL;
	if (notify_enabled && sd_watchdog_enabled(0, &watchdog_usec) <= 0)
		watchdog_usec = 0;
}

bool ufs_notify_under_systemd(void)
{
	return notify_enabled || getenv("JOURNAL_STREAM");
}

static void notify_status(struct ufs_daemon *d, const char *extra)
{
	struct ufs_stats total;

	ufs_stats_total(d, &total);
	sd_notifyf(0, "%sSTATUS=transport=%s workers=%u queue_mode=%s zero_copy=%s "
		   "requests_ring=%llu requests_dev=%llu errors=%llu%s",
		   extra, d->transport == UFS_TRANSPORT_URING ? "uring" : "dev", d->nworkers,
		   d->queue_mode, d->zero_copy_state, (unsigned long long)total.requests_ring,
		   (unsigned long long)total.requests_dev, (unsigned long long)total.errors,
		   watchdog_usec ? "\nWATCHDOG=1" : "");
}

void ufs_notify_ready(struct ufs_daemon *d)
{
	if (notify_enabled)
		notify_status(d, "READY=1\n");
}

void ufs_notify_status(struct ufs_daemon *d)
{
	if (notify_enabled)
		notify_status(d, "");
}

void ufs_notify_stopping(void)
{
	if (notify_enabled)
		sd_notify(0, "STOPPING=1");
}

int ufs_notify_interval_ms(void)
{
	if (!notify_enabled)
		return -1;
	/* Pet the watchdog twice per period. */
	if (watchdog_usec && watchdog_usec / 2000 < STATUS_INTERVAL_MS)
		return watchdog_usec / 2000;
	return STATUS_INTERVAL_MS;
}
