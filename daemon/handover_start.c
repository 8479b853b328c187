// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A successor's start (handover.h), one call per step of main.c's ladder:
 * --take-over's request (ufs_handover_take_over), the rings' memory mapped
 * back (ufs_handover_map), in place of mount(2) and INIT the restore from
 * the hand-over record (ufs_handover_start, restore.c), and once its
 * transport runs, the predecessor let go (ufs_handover_serving).  What it
 * inherited stays in d->handover.inherit until taken or released.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "fs_setup.h"
#include "handover_socket.h"
#include "handover_start.h"
#include "handover_status.h"
#include "log.h"
#include "notify.h"
#include "process.h"
#include "restore.h"
#include "transport.h"
#include "uring.h"

void ufs_inherit_init(struct ufs_inherit *in)
{
	memset(in, 0, sizeof(*in));
	in->conn = in->fuse_fd = in->record_fd = -1;
}

void ufs_inherit_release(struct ufs_inherit *in)
{
	if (in->conn >= 0)
		close(in->conn);
	if (in->fuse_fd >= 0)
		close(in->fuse_fd);
	if (in->record_fd >= 0)
		close(in->record_fd);
	for (unsigned int i = 0; i < in->ndev; i++) {
		if (in->dev_fds[i] >= 0)
			close(in->dev_fds[i]);
	}
	for (unsigned int i = 0; i < in->nring; i++) {
		if (in->ring_fds[i] >= 0)
			close(in->ring_fds[i]);
	}
	for (uint32_t i = 0; i < in->nfile_fds; i++) {
		if (in->file_fds[i] >= 0)
			close(in->file_fds[i]);
	}
	free(in->file_fds);
	ufs_lock_owners_free(in->locks, in->nlocks);
	ufs_inherit_init(in);
}

void ufs_handover_init(struct ufs_daemon *d)
{
	ufs_inherit_init(&d->handover.inherit);
}

int ufs_handover_take_over(struct ufs_daemon *d, char *settings, size_t settings_len)
{
	struct ufs_record_header h;
	struct ufs_config_error err;
	char why[512];

	if (ufs_handover_request(d->mountpoint, &d->handover.inherit, why, sizeof(why))) {
		fprintf(stderr, "uringfs: %s\n", why);
		return -1;
	}
	if (pread(d->handover.inherit.record_fd, &h, sizeof(h), 0) != sizeof(h) ||
	    h.magic != UFS_RECORD_MAGIC || !memchr(h.settings, 0, sizeof(h.settings)) ||
	    !memchr(h.source, 0, sizeof(h.source))) {
		fprintf(stderr, "uringfs: the running daemon handed over no usable record\n");
		ufs_handover_finish(&d->handover.inherit, "its record is unreadable");
		return -1;
	}
	if (!d->source) {
		snprintf(d->handover.source, sizeof(d->handover.source), "%s", h.source);
		d->source = d->handover.source;
	}
	if (!settings[0] && h.settings[0]) {
		if (ufs_mount_opts_parse(h.settings, &d->cfg, &d->mount_opts, &err)) {
			fprintf(stderr, "uringfs: the running daemon's -o: %s\n", err.msg);
			ufs_handover_finish(&d->handover.inherit, "its -o do not parse here");
			return -1;
		}
		snprintf(settings, settings_len, "%s", h.settings);
	}
	return 0;
}

int ufs_handover_map(struct ufs_daemon *d)
{
	char why[256];

	if (ufs_uring_inherit_map(d, why, sizeof(why)) == 0)
		return 0;
	ufs_err("cannot take over %s: %s; the mount stays as it is", d->mountpoint, why);
	ufs_handover_finish(&d->handover.inherit, why);
	return -1;
}

int ufs_handover_start(struct ufs_daemon *d, const char *settings, int *ready_fd)
{
	char why[512];
	int ret;

	ret = ufs_restore(d, why, sizeof(why));
	if (ret) {
		char real[PATH_MAX];

		ufs_err("cannot take over %s: %s; the mount stays as it is", d->mountpoint, why);
		/* With systemd's store nobody serves it now: say why where --stats looks. */
		if (d->handover.inherit.from == UFS_INHERIT_FDSTORE &&
		    !ufs_mount_real_path(d->mountpoint, real, sizeof(real))) {
			ufs_handover_status(real, why);
			ufs_notify_not_serving(&d->notify, why);
		}
		ufs_handover_finish(&d->handover.inherit, why);
		return ret;
	}
	if (!d->foreground && (ufs_process_detach(ready_fd) || ufs_fs_reopen_proc(&d->fs))) {
		fprintf(stderr, "uringfs: cannot detach: %m\n");
		return -errno;
	}
	ufs_record_set_settings(&d->record, settings);
	ufs_info("took over %s (restart %llu of this mount)", d->mountpoint,
		 (unsigned long long)d->record.hdr->restarts);
	return 0;
}

void ufs_handover_serving(struct ufs_daemon *d, int *ready_fd)
{
	int ret;

	/*
	 * ExecReload='s successor must be the service's main process
	 * before the old one exits, or systemd ends the service with it.
	 * systemd watches a main process only if it is its child, which
	 * this one is once its parent, the reload command, has gone: let
	 * the parent go first.
	 */
	if (d->handover.inherit.from == UFS_INHERIT_TAKEOVER && d->notify.enabled) {
		pid_t parent = getppid();
		bool detached = *ready_fd >= 0;

		ufs_process_detach_done(*ready_fd, 0, true);
		*ready_fd = -1;
		for (int i = 0; detached && i < 200 && getppid() == parent; i++)
			usleep(10000);
		ufs_notify_main_pid(&d->notify);
	}
	/* The predecessor has gone: what it read and never answered comes again. */
	ufs_handover_finish_serving(&d->handover.inherit, &d->workers_running);
	if (!__atomic_load_n(&d->workers_running, __ATOMIC_ACQUIRE))
		return;	/* the connection ended meanwhile: the main loop ends at once */
	ret = ufs_transport_resend(d);
	if (ret)
		ufs_warn("asking the kernel to resend: %s", strerror(-ret));
}
