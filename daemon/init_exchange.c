// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The INIT exchange on /dev/fuse: the kernel's offer read, the reply
 * negotiated (init_negotiate.c) and checked against what the settings demand.
 */
#include <errno.h>
#include <string.h>

#include "daemon.h"
#include "dev.h"
#include "fs_xattr.h"
#include "init_exchange.h"
#include "io_path.h"
#include "log.h"
#include "uring.h"

/*
 * Read and answer INIT.  io_uring is offered to the kernel only when the
 * settings allow it and this process can create a ring of the kind the
 * transport needs.
 */
int ufs_init_exchange(struct ufs_daemon *d)
{
	union {
		struct fuse_in_header h;
		uint8_t bytes[8192];
	} buf;
	const struct fuse_init_in *in = (const void *)(&buf.h + 1);
	struct ufs_init_limits limits;
	struct ufs_init_out out;
	const char *why;
	bool want_uring;
	ssize_t n;
	int ret;

	ufs_debug_pause("init");	/* t_mount's unmount before INIT comes here */
	n = ufs_dev_read_init(d->fuse_fd, &buf, sizeof(buf));
	/* ENODEV: unmounted, ECONNABORTED: aborted, before INIT came. */
	if (n == -ENODEV || n == -ECONNABORTED)
		return -ENOTCONN;
	if (n < 0) {
		ufs_err("reading INIT from /dev/fuse: %s", strerror(-n));
		return n;
	}
	if ((size_t)n < sizeof(buf.h) + 8 || buf.h.opcode != FUSE_INIT || buf.h.len != n) {
		ufs_err("expected INIT from the kernel, got opcode %u (%zd bytes)", buf.h.opcode, n);
		return -EPROTO;
	}
	want_uring = d->cfg.io_uring != UFS_SWITCH_OFF && ufs_uring_supported();
	ufs_init_limits_read(&limits);
	ret = ufs_init_negotiate(in, n - sizeof(buf.h), &d->cfg, &limits, want_uring, &out,
				 &d->conn);
	if (ret) {
		ufs_err("kernel speaks FUSE %u.%u; uringfs needs 7.28 or newer", in->major,
			in->minor);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return ret;
	}
	if (d->cfg.io_uring == UFS_SWITCH_ON && !d->conn.uring) {
		ufs_err("io_uring=on, but %s", d->conn.uring_off_reason);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	if (d->cfg.zero_copy == UFS_SWITCH_ON && !d->conn.uring_bufpool) {
		ufs_err("zero_copy=on, but %s", !d->conn.uring ? d->conn.uring_off_reason :
			"the kernel has no FUSE-over-io_uring buffer pools (Linux 7.3 needed)");
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	/* The size of a buffer pool no queue has would be taken and do nothing. */
	if (d->cfg.bufpool_buffers && !d->conn.uring_bufpool) {
		ufs_err("bufpool_buffers=%u, but %s", d->cfg.bufpool_buffers,
			!d->conn.uring ? d->conn.uring_off_reason :
			"the kernel has no FUSE-over-io_uring buffer pools (Linux 7.3 needed)");
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	if (d->cfg.io_path == UFS_IO_PATH_PASSTHROUGH && !d->conn.passthrough) {
		ufs_err("io_path=passthrough, but %s", d->conn.passthrough_off_reason);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	why = ufs_acls_unenforced(&d->cfg, &d->conn);
	if (why && d->cfg.allow_other) {
		ufs_err("allow_other: POSIX ACLs would not be enforced through the mount (%s)",
			why);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	/* Before the reply: a successor must find the connection as the kernel has it. */
	ufs_record_set_init(&d->record, in, n - sizeof(buf.h), &out, sizeof(out), d->mnt.conn_id);
	ret = ufs_dev_write_reply(d->fuse_fd, buf.h.unique, 0, &out, sizeof(out));
	/* The connection ended meanwhile, and INIT with it (dev.c: dev_reply). */
	if (ret == -ENOENT || ret == -ENODEV)
		return -ENOTCONN;
	if (ret) {
		ufs_err("replying to INIT: %s", strerror(-ret));
		return ret;
	}
	ufs_info("FUSE %u.%u, max_write=%u, flags=0x%llx", FUSE_KERNEL_VERSION, d->conn.minor,
		 d->conn.max_write, (unsigned long long)d->conn.flags);
	/* BACKING_OPEN works only once the kernel has taken the reply. */
	if (ufs_io_path_start(&d->fs, d->fuse_fd, &why) != UFS_PT_ON) {
		if (d->cfg.io_path == UFS_IO_PATH_PASSTHROUGH) {
			ufs_err("io_path=passthrough, but %s", why);
			return -EOPNOTSUPP;
		}
		ufs_info("passthrough: off (%s)", why);
	}
	return 0;
}
