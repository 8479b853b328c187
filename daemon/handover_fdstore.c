// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * systemd's file descriptor store (handover.h): the daemon puts the
 * connection, its hand-over record, the /dev/fuse clones and the rings'
 * memory files there once it serves (notify.c speaks to systemd otherwise);
 * after a crash, a restart or an upgrade the next start gets them back
 * (LISTEN_FDS) and carries on.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "daemon.h"
#include "handover_fdstore.h"
#include "handover_start.h"
#include "log.h"
#include "transport.h"

int ufs_fdstore_inherit(struct ufs_inherit *in)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names);

	for (int i = 0; i < n; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names && names[i] ? names[i] : "";

		if (!strcmp(name, "fuse") && in->fuse_fd < 0)
			in->fuse_fd = fd;
		else if (!strcmp(name, "record") && in->record_fd < 0)
			in->record_fd = fd;
		else if (!strncmp(name, "dev-", 4) && in->ndev < UFS_INHERIT_DEV_MAX)
			in->dev_fds[in->ndev++] = fd;
		else if (!strncmp(name, "ring-", 5) && in->nring < UFS_INHERIT_RING_MAX)
			in->ring_fds[in->nring++] = fd;
		else
			close(fd);
		if (names)
			free(names[i]);
	}
	free(names);
	if (in->fuse_fd >= 0 && in->record_fd >= 0) {
		in->from = UFS_INHERIT_FDSTORE;
	} else if (n > 0) {
		/* The connection went (the store drops it when it dies): the rest is stale. */
		sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=record");
		for (unsigned int i = 0; i < in->ndev || i < in->nring; i++) {
			char msg[64];

			snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s-%u",
				 i < in->ndev ? "dev" : "ring", i);
			sd_notify(0, msg);
			if (i < in->ndev && i < in->nring) {
				snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=ring-%u", i);
				sd_notify(0, msg);
			}
		}
		ufs_inherit_release(in);
	}
	return n < 0 ? n : 0;
}

static bool fdstore_put(int fd, const char *name);

/*
 * fds as PREFIX-0, PREFIX-1...; a predecessor's beyond them (it had more
 * workers, or another transport) leave the store.
 */
static void fdstore_named(const int *fds, unsigned int n, const char *prefix, unsigned int had)
{
	char name[64];

	for (unsigned int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s-%u", prefix, i);
		fdstore_put(fds[i], name);
	}
	for (unsigned int i = n; i < had; i++) {
		snprintf(name, sizeof(name), "FDSTOREREMOVE=1\nFDNAME=%s-%u", prefix, i);
		sd_notify(0, name);
	}
}

static bool fdstore_put(int fd, const char *name)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
	if (sd_pid_notify_with_fds(0, 0, msg, &fd, 1) > 0)
		return true;
	ufs_log_once(UFS_LOG_WARN, "cannot send %s to systemd's file descriptor store: a "
				   "restart will unmount", name);
	return false;
}

void ufs_fdstore_keep(struct ufs_daemon *d)
{
	int fds[UFS_INHERIT_DEV_MAX];
	unsigned int n;

	if (!d->notify.enabled || !ufs_record_kept(&d->record))
		return;
	d->handover.stored_fuse = fdstore_put(d->fuse_fd, "fuse") &&
				  fdstore_put(d->record.fd, "record");
	n = ufs_transport_clone_fds(d, fds, UFS_INHERIT_DEV_MAX);
	fdstore_named(fds, n, "dev", d->handover.inherit.ndev);
	d->handover.stored_dev = n;
	n = ufs_transport_ring_fds(d, fds, UFS_INHERIT_DEV_MAX);
	fdstore_named(fds, n, "ring", d->handover.inherit.nring);
	d->handover.stored_ring = n;
}

void ufs_fdstore_forget(struct ufs_daemon *d)
{
	if (!d->notify.enabled)
		return;
	sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=fuse");
	sd_notify(0, "FDSTOREREMOVE=1\nFDNAME=record");
	fdstore_named(NULL, 0, "dev", d->handover.stored_dev);
	fdstore_named(NULL, 0, "ring", d->handover.stored_ring);
}
