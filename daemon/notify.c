// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sd_notify(3) messages.
 */
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "notify.h"

#define STATUS_INTERVAL_MS 10000

void ufs_notify_init(struct ufs_notify *n)
{
	n->enabled = getenv("NOTIFY_SOCKET") != NULL;
	n->journal = getenv("JOURNAL_STREAM") != NULL;
	if (!n->enabled || sd_watchdog_enabled(0, &n->watchdog_usec) <= 0)
		n->watchdog_usec = 0;
}

bool ufs_notify_under_systemd(const struct ufs_notify *n)
{
	return n->enabled || n->journal;
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
		   d->notify.watchdog_usec ? "\nWATCHDOG=1" : "");
}

void ufs_notify_ready(struct ufs_daemon *d)
{
	if (d->notify.enabled)
		notify_status(d, "READY=1\n");
}

void ufs_notify_status(struct ufs_daemon *d)
{
	if (d->notify.enabled)
		notify_status(d, "");
}

void ufs_notify_not_serving(const struct ufs_notify *n, const char *why)
{
	if (n->enabled)
		sd_notifyf(0, "STATUS=not serving: %s", why);
}

void ufs_notify_stopping(const struct ufs_notify *n)
{
	if (n->enabled)
		sd_notify(0, "STOPPING=1");
}

int ufs_notify_interval_ms(const struct ufs_notify *n)
{
	if (!n->enabled)
		return -1;
	/* Pet the watchdog twice per period. */
	if (n->watchdog_usec && n->watchdog_usec / 2000 < STATUS_INTERVAL_MS)
		return n->watchdog_usec / 2000;
	return STATUS_INTERVAL_MS;
}
