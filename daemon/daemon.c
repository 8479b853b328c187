// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's file system, and its upcalls: stale attributes go to the
 * kernel, the control file's text comes from the stats.
 */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "dev.h"
#include "log.h"

/*
 * The kernel's cached attributes of nodeid are stale: FUSE_NOTIFY_INVAL_INODE
 * with a negative offset drops the attributes and ACLs only, and takes no
 * inode lock, so it is safe while the request that changed them is in
 * flight (fs/fuse/inode.c: fuse_reverse_inval_inode).
 */
static void attr_stale(void *arg, uint64_t nodeid)
{
	struct ufs_daemon *d = arg;
	struct fuse_notify_inval_inode_out out = { .ino = nodeid, .off = -1, .len = 0 };
	int ret = ufs_dev_write_notify(d->fuse_fd, FUSE_NOTIFY_INVAL_INODE, &out, sizeof(out));

	/* ENOENT: the kernel has forgotten the inode, nothing is cached. */
	if (ret && ret != -ENOENT)
		ufs_log_once(UFS_LOG_WARN, "invalidating cached attributes: %s", strerror(-ret));
}

static char *control_snapshot(void *arg, size_t *len)
{
	return ufs_stats_text(arg, len);
}

/* SOURCE opened, with the upcalls of its file system wired to this daemon. */
int ufs_daemon_fs_open(struct ufs_daemon *d)
{
	int ret = ufs_fs_init(&d->fs, &d->cfg, d->source);

	if (ret)
		return ret;
	d->fs.conn = &d->conn;
	d->fs.noatime = d->mount_opts.noatime;
	d->fs.nodiratime = d->mount_opts.nodiratime;
	d->fs.suid = d->mount_opts.suid;
	d->fs.control_snapshot = control_snapshot;
	d->fs.attr_stale = attr_stale;
	d->fs.upcall_arg = d;
	return 0;
}
