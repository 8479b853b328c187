// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sd_notify(3) messages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "log.h"
#include "notify.h"
#include "stats.h"

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
		   ufs_queue_mode_name(d->queue_mode), ufs_zero_copy_state_name(d->zero_copy_state),
		   (unsigned long long)total.requests_ring,
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

void ufs_notify_main_pid(const struct ufs_notify *n)
{
	if (n->enabled)
		sd_notifyf(0, "MAINPID=%d", (int)getpid());
}

/* systemd's manager: its private socket (root, no dbus-daemon needed), else the bus. */
static int manager_bus(sd_bus **out)
{
	sd_bus *bus = NULL;
	int ret = -EPERM;

	if (!geteuid()) {
		ret = sd_bus_new(&bus);
		if (ret >= 0)
			ret = sd_bus_set_address(bus, "unix:path=/run/systemd/private");
		if (ret >= 0)
			ret = sd_bus_start(bus);
		if (ret >= 0) {
			*out = bus;
			return 0;
		}
		sd_bus_unref(bus);
		ufs_dbg("systemd's private socket: %s", strerror(-ret));
	}
	if (sd_bus_open_system(out) >= 0)
		return 0;
	return ret;	/* the private socket's error says more, as root */
}

bool ufs_notify_restart_pending(const struct ufs_notify *n)
{
	static const char dest[] = "org.freedesktop.systemd1";
	sd_bus_error err = SD_BUS_ERROR_NULL;
	sd_bus_message *reply = NULL;
	const char *unit = NULL, *job = NULL;
	char *type = NULL;
	uint32_t job_id = 0;
	sd_bus *bus = NULL;
	bool restart = false;
	int ret;

	if (!n->enabled)
		return false;
	ret = manager_bus(&bus);
	if (ret < 0) {
		ufs_warn("SIGTERM: cannot ask systemd whether it restarts this service (%s): "
			 "unmounting", strerror(-ret));
		return false;
	}
	sd_bus_set_method_call_timeout(bus, 2000000);
	ret = sd_bus_call_method(bus, dest, "/org/freedesktop/systemd1",
				 "org.freedesktop.systemd1.Manager", "GetUnitByPID", &err, &reply, "u",
				 (uint32_t)getpid());
	if (ret >= 0)
		ret = sd_bus_message_read(reply, "o", &unit);
	if (ret >= 0) {
		char *path = strdup(unit);

		sd_bus_message_unref(reply);
		reply = NULL;
		ret = path ? sd_bus_get_property(bus, dest, path, "org.freedesktop.systemd1.Unit",
						 "Job", &err, &reply, "(uo)") : -ENOMEM;
		free(path);
	}
	if (ret >= 0)
		ret = sd_bus_message_read(reply, "(uo)", &job_id, &job);
	if (ret >= 0 && job_id)
		ret = sd_bus_get_property_string(bus, dest, job, "org.freedesktop.systemd1.Job",
						 "JobType", &err, &type);
	if (ret < 0)
		ufs_warn("SIGTERM: asking systemd for this service's job: %s: unmounting",
			 err.message ? err.message : strerror(-ret));
	else
		restart = type && strstr(type, "restart");
	ufs_info("SIGTERM: systemd's job for this service: %s", job_id && type ? type : "none");
	free(type);
	sd_bus_message_unref(reply);
	sd_bus_error_free(&err);
	sd_bus_flush_close_unref(bus);
	return restart;
}
