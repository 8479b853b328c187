// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uringfs: the start-up ladder.
 *
 * settings (cli.c) -> signals blocked (process.c) -> SOURCE opened
 * (daemon.c) -> mounted (mount.c) -> detached (process.c) -> INIT
 * (init.c) -> transport started (transport.c; for io_uring every queue
 * registered, so the ring is ready) -> ready (notify.c) -> the main loop
 * (loop.c) -> stopped (transport.c) -> unmounted.
 *
 * Any failure before "ready" is reported on stderr, undoes the mount and
 * exits non-zero.  After it, the daemon runs until the connection ends
 * (unmount, abort) or a signal asks it to unmount; it exits 0 after an
 * unmount, 1 if the kernel aborted the connection or it could not serve.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "daemon.h"
#include "log.h"
#include "notify.h"
#include "process.h"
#include "transport.h"

static void log_serving(struct ufs_daemon *d)
{
	if (d->cfg.allow_other && geteuid())
		ufs_warn("allow_other without root: what other users create is owned by uid %u, "
			 "and gets no set-id bits", (unsigned int)geteuid());
	ufs_info("serving %s at %s: transport=%s workers=%u queue_mode=%s zero_copy=%s "
		 "passthrough=%s",
		 d->source, d->mountpoint, d->transport == UFS_TRANSPORT_URING ? "uring" : "dev",
		 d->nworkers, d->queue_mode, d->zero_copy_state,
		 d->fs.zero_copy && d->fs.passthrough == UFS_PT_ON ?
			 "unused" : ufs_passthrough_state_name(d->fs.passthrough));
}

static int run(struct ufs_daemon *d)
{
	struct ufs_config_error err;
	int ready_fd = -1, ret;
	sigset_t sigs;

	/* Before the mount: a signal from now on must not leave it behind. */
	if (ufs_process_block_signals(&sigs))
		return 1;
	ret = ufs_daemon_fs_open(d);
	if (ret) {
		fprintf(stderr, "uringfs: source %s: %s\n", d->source, strerror(-ret));
		return 1;
	}
	d->event_fd = eventfd(0, EFD_CLOEXEC);
	if (d->event_fd < 0 || ufs_workers_alloc(d)) {
		fprintf(stderr, "uringfs: out of resources at start-up: %m\n");
		goto err_fs;
	}
	if (ufs_mount(&d->mnt, d->source, d->mountpoint, &d->cfg, &d->mount_opts, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		goto err_fs;
	}
	d->fuse_fd = d->mnt.fd;
	if (!d->foreground && (ufs_process_detach(&ready_fd) || ufs_fs_reopen_proc(&d->fs))) {
		fprintf(stderr, "uringfs: cannot detach: %m\n");
		goto err_unmount;
	}
	ret = ufs_init_exchange(d);
	if (ret)
		goto err_unmount;
	ret = ufs_transport_start(d);
	if (ret) {
		ufs_err("starting the workers: %s", strerror(-ret));
		goto err_workers;
	}
	log_serving(d);
	if (!d->foreground && !ufs_notify_under_systemd(&d->notify))
		ufs_log_set_target(UFS_LOG_TARGET_SYSLOG);
	ufs_process_detach_done(ready_fd, 0, ufs_notify_under_systemd(&d->notify));
	ufs_notify_ready(d);

	ufs_main_loop(d, &sigs);
	ufs_transport_stop(d);
	ret = ufs_main_loop_end(d);
	ufs_unmount(&d->mnt);
	ufs_mount_release(&d->mnt);
	ufs_fs_destroy(&d->fs);
	ufs_info("%s unmounted, exiting", d->mountpoint);
	return ret ? 1 : 0;

err_workers:
	ufs_transport_abandon(d);
err_unmount:
	ufs_unmount(&d->mnt);
	ufs_mount_release(&d->mnt);
err_fs:
	ufs_fs_destroy(&d->fs);
	ufs_process_detach_done(ready_fd, 1, true);
	return 1;
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
	if (ufs_cli_load_config(&d->cfg))
		return 1;
	if (cli.print_config) {
		ufs_config_print(&d->cfg, stdout);
		return 0;
	}
	ufs_log_set_level(d->cfg.log_level);
	ufs_notify_init(&d->notify);
	/* journald reads <N> priority prefixes from stderr, with or without -f. */
	if (ufs_notify_under_systemd(&d->notify))
		ufs_log_set_target(UFS_LOG_TARGET_JOURNAL);
	if (ufs_cli_check_dir("source", d->source) ||
	    ufs_cli_check_dir("mountpoint", d->mountpoint))
		return 1;
	ufs_process_raise_fd_limit();
	umask(0);	/* the client's mode is final; see ufs_umask_enter() */
	clock_gettime(CLOCK_REALTIME, &d->started);
	ufs_info("uringfs %s starting: %s on %s, config %s", PACKAGE_VERSION, d->source,
		 d->mountpoint, d->cfg.config_path);
	return run(d);
}
