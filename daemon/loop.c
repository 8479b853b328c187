// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The main thread once the mount serves: signals (unmount, log level,
 * stats), the workers' news (the connection ended or cannot be served),
 * the systemd status, and the grace period after an unmount.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "config_file.h"
#include "copy.h"
#include "daemon.h"
#include "daemon_start.h"
#include "handover_socket.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "stats.h"
#include "transport.h"

#define SHUTDOWN_GRACE_MS 5000	/* after unmounting, before aborting the connection */

/* Why a connection may end under a live mount, for the log. */
static const char *abort_cause(struct ufs_daemon *d, char *text, size_t size)
{
	if (d->cfg.request_timeout && ufs_conn_has(&d->conn, FUSE_REQUEST_TIMEOUT))
		snprintf(text, size,
			 "a request outlived request_timeout=%u s, or someone wrote to "
			 "/sys/fs/fuse/connections/%u/abort", d->cfg.request_timeout, d->mnt.conn_id);
	else
		snprintf(text, size, "someone wrote to /sys/fs/fuse/connections/%u/abort "
			 "or forced an unmount", d->mnt.conn_id);
	return text;
}

static int abort_connection(struct ufs_daemon *d)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", d->mnt.conn_id);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static void reload_log_level(struct ufs_daemon *d)
{
	struct ufs_config cfg;
	struct ufs_config_error err;
	int ret;

	ufs_config_defaults(&cfg);
	snprintf(cfg.config_path, sizeof(cfg.config_path), "%s", d->cfg.config_path);
	ret = ufs_config_load_file(&cfg, cfg.config_path, &err);
	if (ret && ret != -ENOENT) {
		ufs_warn("SIGHUP: %s; keeping log_level", err.msg);
		return;
	}
	/* -o and the command line still win over the file. */
	if (d->cfg.source[0] <= UFS_SRC_FILE) {
		d->cfg.log_level = cfg.log_level;
		ufs_log_set_level(cfg.log_level);
	}
	ufs_info("SIGHUP: log_level is %d", ufs_log_get_level());
}

/*
 * SIGTERM while systemd restarts the service (systemctl restart): leave
 * the mount to the next start, which finds the connection and the record
 * in the file descriptor store.  Workers stop between requests and each
 * ring goes right after its last delivery (as for a take-over).  Any other
 * SIGTERM (systemctl stop, shutdown, kill) unmounts, as it always did.
 */
static bool stop_for_restart(struct ufs_daemon *d)
{
	char why[256];

	if (!d->handover.stored_fuse || !ufs_notify_restart_pending(&d->notify))
		return false;
	if (ufs_transport_pause(d, 30000, why, sizeof(why))) {
		ufs_warn("SIGTERM for a restart: %s: unmounting instead", why);
		return false;
	}
	ufs_notify_stopping(&d->notify);
	ufs_transport_handed_over(d);
	ufs_info("SIGTERM: systemd restarts this service: %s stays mounted, its connection and "
		 "record in systemd's file descriptor store for the next start", d->mountpoint);
	return true;
}

/*
 * Run until every worker has seen the connection end.  A termination
 * signal unmounts; if open files keep the lazily unmounted file system
 * alive past the grace period, the connection is aborted.
 */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The poll timeout: the nearest of the kick, the grace deadline and the status refresh. */
static int loop_timeout(int64_t grace_deadline, int64_t next_status)
{
	int64_t now = now_ms(), wait = -1;

	if (grace_deadline >= 0 && (wait < 0 || grace_deadline - now < wait))
		wait = grace_deadline > now ? grace_deadline - now : 0;
	if (next_status >= 0 && (wait < 0 || next_status - now < wait))
		wait = next_status > now ? next_status - now : 0;
	return wait;
}

void ufs_main_loop(struct ufs_daemon *d, const sigset_t *sigs, int listen_fd)
{
	struct pollfd pfd[4];
	bool fatal_seen = false;
	int64_t grace_deadline = -1, next_status = -1;
	int interval = ufs_notify_interval_ms(&d->notify);

	pfd[0].fd = signalfd(-1, sigs, SFD_CLOEXEC);
	pfd[0].events = POLLIN;
	pfd[1].fd = d->event_fd;
	pfd[1].events = POLLIN;
	/* A successor asking for the mount (handover_socket.c), and a start finding it served. */
	pfd[2].fd = listen_fd;
	pfd[2].events = POLLIN;
	/* auto_unmount's keeper (mount_keeper.c): its socket ends when it does. */
	pfd[3].fd = d->mnt.keeper.pid ? d->mnt.keeper.sock : -1;
	pfd[3].events = POLLIN;

	while (__atomic_load_n(&d->workers_running, __ATOMIC_ACQUIRE) > 0) {
		int n;

		if (interval > 0 && next_status < 0)
			next_status = now_ms() + interval;
		n = poll(pfd, 4, loop_timeout(grace_deadline, next_status));
		if (grace_deadline >= 0 && now_ms() >= grace_deadline) {
			ufs_warn("still in use %d ms after unmounting: aborting the connection",
				 SHUTDOWN_GRACE_MS);
			if (abort_connection(d))
				ufs_transport_force_stop(d);
			grace_deadline = -2;	/* done, never again */
		}
		if (next_status >= 0 && now_ms() >= next_status) {
			ufs_notify_status(d);
			next_status = -1;
		}
		if (n <= 0)
			continue;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			if (read(d->event_fd, &v, sizeof(v)) < 0) {
				/* Spurious wake-up. */
			}
			if (__atomic_load_n(&d->fatal, __ATOMIC_ACQUIRE) && !fatal_seen) {
				fatal_seen = true;
				ufs_err("ending the connection: it can no longer be served");
				__atomic_compare_exchange_n(&d->worker_error, &(int){ 0 }, d->fatal,
							    false, __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED);
				if (abort_connection(d))
					ufs_transport_force_stop(d);
			}
			/* A worker saw the connection end: lock waits and copies are moot. */
			ufs_wait_interrupt_all(&d->fs.waits);
			ufs_copy_interrupt_all(&d->fs.copies);
		}
		if (pfd[3].revents) {
			ufs_warn("auto_unmount: the mount's keeper (pid %d) ended: if this daemon "
				 "dies now, its mount stays (unmount it with fusermount3 -u)",
				 (int)d->mnt.keeper.pid);
			pfd[3].fd = -1;
		}
		if ((pfd[2].revents & POLLIN) && grace_deadline == -1 &&
		    ufs_handover_serve(d, pfd[2].fd))
			break;	/* the successor serves: leave without unmounting */
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(pfd[0].fd, &si, sizeof(si)) != sizeof(si))
				continue;
			switch (si.ssi_signo) {
			case SIGTERM:
			case SIGINT:
				if (grace_deadline != -1)
					break;	/* already unmounting */
				if (si.ssi_signo == SIGTERM && stop_for_restart(d))
					goto handed_over;
				ufs_info("signal %d: unmounting %s", si.ssi_signo, d->mountpoint);
				ufs_notify_stopping(&d->notify);
				ufs_daemon_notifiers_quiesce(d);
				ufs_unmount(&d->mnt);
				grace_deadline = now_ms() + SHUTDOWN_GRACE_MS;
				break;
			case SIGHUP:
				ufs_log_reopen();
				reload_log_level(d);
				break;
			case SIGUSR1:
				ufs_stats_log(d);
				break;
			}
		}
	}
handed_over:
	if (pfd[0].fd >= 0)
		close(pfd[0].fd);
	ufs_handover_unlisten(d, pfd[2].fd);
}

int ufs_main_loop_end(struct ufs_daemon *d)
{
	int ret = __atomic_load_n(&d->worker_error, __ATOMIC_RELAXED);
	char cause[160];

	if (!ufs_mount_listed(&d->mnt))
		return ret;
	/*
	 * The connection ended, yet nobody unmounted: the kernel aborted it
	 * (libfuse's unmount skips a dead connection, so take it away here,
	 * or every access would answer ENOTCONN until an operator did).  A
	 * fatal error was logged where it happened.
	 */
	if (!__atomic_load_n(&d->fatal, __ATOMIC_ACQUIRE))
		ufs_err("the kernel aborted the connection of %s while mounted: %s", d->mountpoint,
			abort_cause(d, cause, sizeof(cause)));
	if (ufs_mount_detach(&d->mnt))
		ufs_err("cannot detach the dead mount %s: take it away with fusermount3 -uz",
			d->mnt.real);
	else
		ufs_info("detached the dead mount %s", d->mnt.real);
	return ret ? ret : -ECONNABORTED;
}
