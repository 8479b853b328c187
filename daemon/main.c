// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uringfs: the start-up ladder.
 *
 * settings (cli.c) -> signals blocked (process.c) -> SOURCE opened
 * (daemon_start.c) -> mounted (mount.c) -> detached (process.c) -> INIT
 * (init_exchange.c) -> transport started (transport.c; for io_uring every queue
 * registered, so the ring is ready) -> ready (notify.c) -> the main loop
 * (loop.c) -> stopped (transport.c) -> unmounted.
 *
 * A successor (handover.h) inherits a live connection instead: it neither
 * mounts nor reads INIT, but restores the daemon from the hand-over record
 * (handover_start.c, restore.c), starts its transport, and has the kernel
 * send again what its predecessor read and never answered.
 *
 * Any failure before "ready" is reported on stderr, undoes the mount (a
 * successor leaves it to whoever holds it) and exits non-zero; but an
 * unmount then (the connection ends during INIT or the ring's registration)
 * is no failure: the daemon says so and exits 0.  After "ready",
 * the daemon runs until the connection ends (unmount, abort), a signal
 * asks it to unmount, or a successor takes the mount; it exits 0 after an
 * unmount or a hand-over, 1 if the kernel aborted the connection or it
 * could not serve.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "coherence.h"
#include "daemon.h"
#include "daemon_start.h"
#include "fs_setup.h"
#include "handover_fdstore.h"
#include "handover_socket.h"
#include "handover_start.h"
#include "handover_status.h"
#include "init_exchange.h"
#include "loop.h"
#include "log.h"
#include "notify.h"
#include "process.h"
#include "remount.h"
#include "running.h"
#include "slow.h"
#include "transport.h"
#include "worker.h"

static void log_serving(struct ufs_daemon *d)
{
	if (d->cfg.allow_other && geteuid())
		ufs_warn("allow_other without root: what other users create is owned by uid %u, "
			 "and gets no set-id bits", (unsigned int)geteuid());
	ufs_info("serving %s at %s: transport=%s workers=%u queue_mode=%s zero_copy=%s "
		 "passthrough=%s",
		 d->source, d->mountpoint, d->transport == UFS_TRANSPORT_URING ? "uring" : "dev",
		 d->nworkers, ufs_queue_mode_name(d->queue_mode),
		 ufs_zero_copy_state_name(d->zero_copy_state),
		 d->fs.zero_copy && d->fs.pt.state == UFS_PT_ON ?
			 "unused" : ufs_passthrough_state_name(d->fs.pt.state));
}

static bool uringfs_mount_there(struct ufs_daemon *d)
{
	char real[PATH_MAX];

	return !ufs_mount_real_path(d->mountpoint, real, sizeof(real)) &&
	       ufs_mount_ours(real) > 0;
}

/*
 * A uringfs mount of ours already at the mount point: served (its daemon's
 * socket answers: refuse, --take-over is the way), or left by a daemon that
 * died with nobody to carry on (take it away, as a dead mount answers only
 * ENOTCONN; under systemd a crashed daemon's connection comes back through
 * the store instead, and is taken over).
 */
static int mount_point_free(struct ufs_daemon *d)
{
	struct ufs_mount old = { 0 };
	long conn;

	if (ufs_mount_real_path(d->mountpoint, old.real, sizeof(old.real)) ||
	    (conn = ufs_mount_ours(old.real)) <= 0)
		return 0;
	old.conn_id = (unsigned int)conn;
	if (ufs_handover_served(old.real)) {
		fprintf(stderr, "uringfs: %s is served by a running uringfs daemon (or one whose "
			"take-over socket is missing): uringfs --take-over %s replaces it, "
			"fusermount3 -u takes it away\n", old.real, d->mountpoint);
		return -EBUSY;
	}
	ufs_warn("a uringfs mount at %s that no daemon serves (its daemon died): detaching it",
		 old.real);
	if (ufs_mount_detach(&old)) {
		fprintf(stderr, "uringfs: cannot detach the dead mount %s: %m\n", old.real);
		return -EBUSY;
	}
	return 0;
}

/* A fresh mount: mount(2), detach, INIT; the record begins. */
static int start_fresh(struct ufs_daemon *d, const char *settings, int *ready_fd)
{
	struct ufs_config_error err;
	char options[UFS_RECORD_OPTIONS];
	int ret;

	ret = mount_point_free(d);
	if (ret)
		return ret;
	if (ufs_mount(&d->mnt, d->source, d->mountpoint, &d->cfg, &d->mount_opts, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return -EIO;
	}
	d->fuse_fd = d->mnt.fd;
	/* A successor finds every node id by its file handle: none, no hand-over. */
	/* An ordinary user's daemon has none by design: not a warning (--stats says it). */
	if (d->cfg.handover && !d->fs.inodes.handles.usable) {
		ufs_log(d->fs.inodes.handles.unprivileged ? UFS_LOG_INFO : UFS_LOG_WARN,
			"handover: %s gives no file handles (inode_handles): a successor could "
			"not find its files again, so this mount goes with its daemon", d->source);
	} else if (d->cfg.handover) {
		ufs_mount_kernel_options(&d->cfg, &d->mount_opts, options, sizeof(options));
		ret = ufs_record_create(&d->record, d->source, d->mnt.real, options, settings);
		if (ret)
			fprintf(stderr, "uringfs: hand-over record: %s; handover is off\n",
				strerror(-ret));
		ufs_fs_set_record(&d->fs, &d->record);
	}
	if (!d->foreground && (ufs_process_detach(ready_fd) || ufs_fs_reopen_proc(&d->fs))) {
		fprintf(stderr, "uringfs: cannot detach: %m\n");
		return -errno;
	}
	return ufs_init_exchange(d);
}

/*
 * The connection ended before the daemon served (ret -ENOTCONN from INIT
 * or the ring's registration).  Gone from the mount table: someone
 * unmounted it while the daemon started, which was their choice, so the
 * daemon says so and exits 0.  Still listed: the kernel aborted it.
 */
static bool unmounted_while_starting(struct ufs_daemon *d, int ret)
{
	char cause[64];

	if (ret != -ENOTCONN)
		return false;
	if (!ufs_mount_listed(&d->mnt)) {
		ufs_info("%s was unmounted while uringfs started: exiting", d->mountpoint);
		return true;
	}
	snprintf(cause, sizeof(cause), "/sys/fs/fuse/connections/%u/abort", d->mnt.conn_id);
	ufs_err("the kernel aborted the connection of %s while uringfs started (%s, or a forced "
		"unmount)",
		d->mountpoint, cause);
	return false;
}

static int run(struct ufs_daemon *d, const char *settings)
{
	bool inherited = d->handover.inherit.from != UFS_INHERIT_NONE;
	int ready_fd = -1, listen_fd, ret, status = 1;
	sigset_t sigs;

	ufs_store_init(&d->store);
	/* Before the mount: a signal from now on must not leave it behind. */
	if (ufs_process_block_signals(&sigs))
		return 1;
	ret = ufs_daemon_fs_open(d);
	if (ret) {
		fprintf(stderr, "uringfs: source %s: %s\n", d->source, strerror(-ret));
		goto err_out;
	}
	/* A successor opens it after the predecessor's record: it writes to it until then. */
	if (!inherited && ufs_daemon_store_open(d))
		goto err_fs;
	d->event_fd = eventfd(0, EFD_CLOEXEC);
	if (d->event_fd < 0 || ufs_daemon_workers_alloc(d)) {
		fprintf(stderr, "uringfs: out of resources at start-up: %m\n");
		goto err_fs;
	}
	ret = inherited ? ufs_handover_start(d, settings, &ready_fd) :
			  start_fresh(d, settings, &ready_fd);
	if (ret) {
		status = !unmounted_while_starting(d, ret);
		goto err_unmount;
	}
	ufs_daemon_store_load(d, inherited);
	if (ufs_daemon_cache_start(d, inherited))
		goto err_unmount;
	ret = ufs_transport_start(d);
	if (ret) {
		status = !unmounted_while_starting(d, ret);
		if (ret != -ENOTCONN)
			ufs_err("starting the workers: %s", strerror(-ret));
		goto err_workers;
	}
	if (inherited)
		ufs_handover_serving(d, &ready_fd);
	ufs_daemon_prune_start(d);
	ufs_slow_watch_start(d);
	/*
	 * The take-over socket before anyone hears "ready": a start finding the
	 * mount dead (its socket there, nobody listening) may take it away, and
	 * a reload right after READY=1 must find us.
	 */
	listen_fd = ufs_handover_listen(d);
	/* What a remount may pass back unchanged (running.h). */
	ufs_running_publish(d->mnt.real, d->mnt.conn_id, d->source, &d->cfg, &d->mount_opts,
			    settings);
	log_serving(d);
	if (!d->foreground && !ufs_notify_under_systemd(&d->notify))
		ufs_log_set_target(UFS_LOG_TARGET_SYSLOG);	/* detached: no more echo */
	ufs_process_detach_done(ready_fd, 0, ufs_notify_under_systemd(&d->notify));
	ufs_fdstore_keep(d);
	ufs_inherit_release(&d->handover.inherit);
	ufs_handover_status(d->mnt.real, NULL);
	ufs_notify_ready(d);

	ufs_main_loop(d, &sigs, listen_fd);
	ufs_slow_watch_stop(d);
	ufs_daemon_prune_stop(d);
	if (__atomic_load_n(&d->pause.state, __ATOMIC_ACQUIRE) == UFS_SERVE_HANDED_OVER) {
		ufs_debug_pause("handed_over");	/* t_handover: an exit that takes time */
		return 0;	/* everything is the successor's now: leave it all as it is */
	}
	ufs_fdstore_forget(d);
	/* The workers saw the connection end: no notification can wait on a request now. */
	ufs_coherence_stop(&d->fs.coherence);
	ufs_transport_stop(d);
	ret = ufs_main_loop_end(d);
	ufs_daemon_notifiers_quiesce(d);
	ufs_unmount(&d->mnt);
	ufs_running_forget(d->mnt.real, d->mnt.conn_id);
	/* Copies and waits end here: while the connection's descriptor is open. */
	ufs_fs_destroy(&d->fs);
	ufs_mount_release(&d->mnt);
	ufs_store_close(&d->store);
	ufs_record_close(&d->record);
	ufs_info("%s unmounted, exiting", d->mountpoint);
	return ret ? 1 : 0;

err_workers:
	ufs_daemon_notifiers_quiesce(d);
	if (!inherited)
		ufs_transport_abandon(d);
err_unmount:
	if (inherited)
		goto err_out;	/* not ours to undo: backing ids, the record, the mount */
	ufs_unmount(&d->mnt);
	ufs_mount_release(&d->mnt);
err_fs:
	ufs_fs_destroy(&d->fs);
	ufs_store_close(&d->store);
err_out:
	ufs_handover_finish(&d->handover.inherit,
			    status ? "the successor could not start (see its log)" :
				     "the mount was unmounted while the successor started");
	ufs_inherit_release(&d->handover.inherit);
	ufs_process_detach_done(ready_fd, status, true);
	return status;
}

int main(int argc, char **argv)
{
	static struct ufs_daemon daemon;
	struct ufs_daemon *d = &daemon;
	struct ufs_cli cli = { 0 };
	int ret;

	ufs_config_defaults(&d->cfg);
	ret = ufs_cli_parse(d, &cli, argc, argv);
	if (ret)
		return ret;
	if (cli.check_config)
		return ufs_cli_check_config(cli.check_config);
	if (cli.stats_mountpoint)
		return ufs_cli_print_stats(d, &cli);
	if (cli.remount)
		return ufs_remount(d->mountpoint, cli.settings);
	ufs_handover_init(d);
	ufs_pause_init(&d->pause);
	if (cli.take_over && ufs_handover_take_over(d, cli.settings, sizeof(cli.settings)))
		return 1;
	if (ufs_handover_map(d))
		return 1;
	if (ufs_cli_load_config(&d->cfg)) {
		ufs_handover_finish(&d->handover.inherit, "the successor's settings are invalid");
		return 1;
	}
	if (cli.print_config) {
		ufs_config_print(&d->cfg, stdout);
		return 0;
	}
	ufs_log_set_level(d->cfg.log_level);
	ufs_notify_init(&d->notify);
	/* systemd's store: a connection a predecessor left (restart, crash, upgrade). */
	if (!cli.take_over && d->cfg.handover && ufs_notify_under_systemd(&d->notify)) {
		ufs_fdstore_inherit(&d->handover.inherit);
		if (ufs_handover_map(d))
			return 1;
	}
	/*
	 * journald reads <N> priority prefixes from stderr, with or without -f.
	 * A daemon that detaches logs to syslog from here on, so a mount that
	 * works prints nothing (mount(8), fstests and scripts read stderr);
	 * warnings and errors reach the caller's stderr too until it detaches.
	 */
	if (ufs_notify_under_systemd(&d->notify))
		ufs_log_set_target(UFS_LOG_TARGET_JOURNAL);
	else if (!d->foreground)
		ufs_log_detaching();
	/*
	 * An inherited mount point is the mount itself, served by nobody yet,
	 * and so is one a dead daemon left (start_fresh takes it away): not
	 * looked at.
	 */
	if (ufs_cli_check_dir("source", d->source) ||
	    (d->handover.inherit.from == UFS_INHERIT_NONE && !uringfs_mount_there(d) &&
	     ufs_cli_check_dir("mountpoint", d->mountpoint))) {
		ufs_handover_finish(&d->handover.inherit,
				    "its SOURCE or MOUNTPOINT is not a directory");
		return 1;
	}
	ufs_process_raise_fd_limit();
	umask(0);	/* the client's mode is final; see ufs_umask_enter() */
	clock_gettime(CLOCK_REALTIME, &d->started);
	ufs_info("uringfs %s starting: %s on %s, config %s", PACKAGE_VERSION, d->source,
		 d->mountpoint, d->cfg.config_path);
	return run(d, cli.settings);
}
