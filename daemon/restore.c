// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A successor's start: the daemon as its predecessor left it, from the
 * hand-over record and the descriptors it inherited (handover.h), in place
 * of mount(2) and INIT.
 *
 *  1. the record, checked against this daemon's SOURCE, mount point and
 *     mount options: it must be the mount it is asked to serve;
 *  2. INIT negotiated again from the kernel's offer as recorded: these
 *     settings must give the very reply the kernel holds the connection to;
 *  3. every node id the kernel may send, as an inode evicted to its file
 *     handle (reopened on first use), and the export records;
 *  4. every POSIX lock owner's description handed over, back on its inode
 *     under its keys (fs_lock.c): the locks are the descriptions';
 *  5. every open file at its fh, on the descriptor handed over or reopened
 *     by handle with the flags it was opened with (O_TRUNC and O_CREAT
 *     dropped), on the data path the kernel holds it on.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "file_table.h"
#include "fs_control.h"
#include "fs_setup.h"
#include "fs_file.h"
#include "fs_lock.h"
#include "fs_shared.h"
#include "io_path.h"
#include "log.h"
#include "restore.h"
#include "uring.h"

static int fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return err;
}

/* The record must be of this mount: same mount point and connection, same SOURCE and options. */
static int check_mount(struct ufs_daemon *d, const struct ufs_record_header *h, char *why,
		       size_t len)
{
	char real[PATH_MAX], src[PATH_MAX], hsrc[PATH_MAX], opts[UFS_RECORD_OPTIONS];
	int ret;

	/* Nothing here may touch the mount itself: nobody serves it until this daemon does. */
	ret = ufs_mount_real_path(d->mountpoint, real, sizeof(real));
	if (ret)
		return fail(why, len, ret, "mount point %s: %s", d->mountpoint, strerror(-ret));
	if (strcmp(real, h->mountpoint))
		return fail(why, len, -EINVAL, "the inherited connection serves %s, not %s",
			    h->mountpoint, real);
	if (ufs_mount_conn_of(real) != (long)h->conn_id)
		return fail(why, len, -ESTALE,
			    "%s is no longer the inherited connection's mount (connection %u)",
			    real, h->conn_id);
	if (!realpath(d->source, src) || !realpath(h->source, hsrc) || strcmp(src, hsrc))
		return fail(why, len, -EINVAL, "the mount serves SOURCE %s, not %s", h->source,
			    d->source);
	ufs_mount_kernel_options(&d->cfg, &d->mount_opts, opts, sizeof(opts));
	if (strcmp(opts, h->options))
		return fail(why, len, -EINVAL,
			    "mount options \"%s\" differ from the live mount's \"%s\": unmount to "
			    "change them",
			    opts, h->options);
	snprintf(d->mnt.mountpoint, sizeof(d->mnt.mountpoint), "%s", d->mountpoint);
	snprintf(d->mnt.real, sizeof(d->mnt.real), "%s", real);
	d->mnt.conn_id = h->conn_id;
	return 0;
}

/* Name the first field where two INIT replies differ. */
static const char *init_difference(const struct ufs_init_out *a, const struct ufs_init_out *b)
{
	if (a->flags != b->flags || a->flags2 != b->flags2)
		return "the negotiated features";
	if (a->max_write != b->max_write || a->max_pages != b->max_pages)
		return "max_write";
	if (a->max_readahead != b->max_readahead)
		return "max_readahead";
	if (a->max_background != b->max_background ||
	    a->congestion_threshold != b->congestion_threshold)
		return "max_background";
	if (a->time_gran != b->time_gran)
		return "the time granularity";
	if (a->max_stack_depth != b->max_stack_depth)
		return "max_stack_depth";
	if (a->request_timeout != b->request_timeout)
		return "request_timeout";
	return memcmp(a, b, sizeof(*a)) ? "the INIT reply" : NULL;
}

/* These settings must answer the recorded offer as the predecessor did. */
static int check_init(struct ufs_daemon *d, const struct ufs_record_header *h, char *why,
		      size_t len)
{
	struct ufs_init_limits limits;
	struct ufs_init_out out, old = { 0 };
	const struct fuse_init_in *in = (const void *)h->init_in;
	bool want_uring = d->cfg.io_uring != UFS_SWITCH_OFF && ufs_uring_supported();
	const char *diff;

	if (h->init_in_len < 8 || h->init_out_len != sizeof(old))
		return fail(why, len, -EPROTO, "the record's INIT is malformed");
	memcpy(&old, h->init_out, sizeof(old));
	ufs_init_limits_read(&limits);
	if (ufs_init_negotiate(in, h->init_in_len, &d->cfg, &limits, want_uring, &out, &d->conn))
		return fail(why, len, -EPROTO, "the recorded INIT is not one this build speaks");
	/*
	 * Under cache_readdir=auto, FUSE_AUTO_INVAL_DATA follows the live
	 * connection: a predecessor of an older build never asked for it (its
	 * kernel then keeps no listings: fs_dir.c), one of this build may have.
	 */
	if (d->cfg.cache_readdir == UFS_RDC_AUTO &&
	    ((out.flags ^ old.flags) & FUSE_AUTO_INVAL_DATA)) {
		out.flags ^= FUSE_AUTO_INVAL_DATA;
		d->conn.flags ^= FUSE_AUTO_INVAL_DATA;
	}
	diff = init_difference(&out, &old);
	if (diff)
		return fail(why, len, -EINVAL,
			    "these settings negotiate %s otherwise than the live connection "
			    "(io_uring, writeback_cache, max_write, ...): unmount to change them",
			    diff);
	return 0;
}

static int restore_nodes(struct ufs_daemon *d, char *why, size_t len)
{
	struct ufs_record *r = &d->record;
	unsigned int lost = 0, restored = 0;

	for (uint32_t i = 0; i < r->hdr->nodes_hwm; i++) {
		struct ufs_record_node n = r->nodes[i];

		if (!n.nodeid)
			continue;
		if (ufs_inode_restore(&d->fs.inodes, i + 1, &n))
			lost++;
		else
			restored++;
	}
	ufs_inode_restore_done(&d->fs.inodes, r->hdr->next_nodeid);
	if (lost)
		ufs_warn("take-over: %u node ids could not be restored: the kernel gets ESTALE "
			 "for them", lost);
	ufs_info("take-over: %u node ids restored", restored);
	(void)why;
	(void)len;
	return 0;
}

/*
 * The lock owners' descriptions a take-over handed over.  Before the open
 * files, whose losses this daemon would write into the record: a lock that
 * cannot be kept fails the take-over, and the predecessor, which still holds
 * every description, serves on with the lock held.
 */
static int restore_locks(struct ufs_daemon *d, char *why, size_t len)
{
	struct ufs_inherit *in = &d->handover.inherit;
	int ret = 0;

	for (uint32_t i = 0; i < in->nlocks; i++) {
		struct ufs_lock_owner_state *s = &in->locks[i];

		if (!ret) {
			ret = ufs_lock_owner_restore(&d->fs, s);
			if (ret)
				fail(why, len, ret, "the POSIX locks of a lock owner on node %llu "
				     "cannot be kept (%s): the running daemon keeps them and serves on",
				     (unsigned long long)s->nodeid, strerror(-ret));
		} else {
			close(s->fd);
		}
		s->fd = -1;
	}
	if (!ret && in->nlocks)
		ufs_info("take-over: %u POSIX lock owners' descriptions restored", in->nlocks);
	return ret;
}

/*
 * The backing descriptor of an open file: the one handed over, or its file
 * reopened.  A passed-through open keeps none (fs_open.c): -1 for it.
 */
static int file_fd(struct ufs_daemon *d, uint32_t index, struct ufs_inode *inode,
		   const struct ufs_record_file *f)
{
	struct ufs_inherit *in = &d->handover.inherit;
	int fd;

	if (index < in->nfile_fds && in->file_fds[index] >= 0) {
		fd = in->file_fds[index];
		in->file_fds[index] = -1;
		return fd;
	}
	if (f->io_mode == UFS_IO_PASSTHROUGH)
		return -1;
	return ufs_reopen(&d->fs, inode, f->flags & ~(O_TRUNC | O_CREAT | O_EXCL));
}

static int restore_file(struct ufs_daemon *d, uint32_t index, const struct ufs_record_file *f)
{
	struct ufs_fs *fs = &d->fs;
	struct ufs_inode *inode = ufs_inode_get(&fs->inodes, f->nodeid);
	struct ufs_file *file;
	int fd = -1, ret;

	if (!inode)
		return -ESTALE;
	if (f->kind != UFS_RECORD_CONTROL) {
		fd = file_fd(d, index, inode, f);
		/* A passed-through file's I/O is the kernel's: its RELEASE still needs it here. */
		if (fd < 0 && f->io_mode != UFS_IO_PASSTHROUGH) {
			ufs_inode_put(&fs->inodes, inode);
			return fd;
		}
	}
	file = ufs_file_new(inode, fd, f->flags);
	if (!file) {
		if (fd >= 0)
			close(fd);
		ufs_inode_put(&fs->inodes, inode);
		return -ENOMEM;
	}
	file->is_dir = f->kind == UFS_RECORD_DIR;
	/* The predecessor's charges stay with the opener (budget.h). */
	if (f->charged_uid) {
		file->uid = f->charged_uid - 1;
		file->charged = fd >= 0 && f->kind != UFS_RECORD_CONTROL;
		if (file->charged)
			ufs_budget_force(&fs->budget, file->uid, 1);
	}
	if (f->kind == UFS_RECORD_CONTROL) {
		/* An opener not known is nobody: its snapshot lists no request. */
		if (!f->charged_uid)
			file->uid = (uid_t)-1;
		ret = ufs_control_file_fill(fs, file);
		if (ret) {
			ufs_file_free(fs, file);
			return ret;
		}
	}
	ufs_file_pin(fs, file, false);
	ret = ufs_io_path_restore(fs, file, f->io_mode, f->backing_id);
	if (!ret)
		ret = ufs_file_restore(&fs->files, index, f->gen, file);
	if (ret)
		ufs_file_free(fs, file);	/* drops the inode's reference */
	return ret;
}

static void restore_files(struct ufs_daemon *d)
{
	struct ufs_record *r = &d->record;
	unsigned int lost = 0, restored = 0;

	for (uint32_t i = 0; i < r->hdr->files_hwm; i++) {
		struct ufs_record_file f = r->files[i];

		if (!f.nodeid)
			continue;
		if (restore_file(d, i, &f)) {
			ufs_record_file_drop(r, i);
			lost++;
		} else {
			restored++;
		}
	}
	ufs_file_table_restored(&d->fs.files);
	if (lost)
		ufs_warn("take-over: %u open files could not be reopened (removed meanwhile?): "
			 "their I/O fails with EBADF", lost);
	ufs_info("take-over: %u open files restored", restored);
}

int ufs_restore(struct ufs_daemon *d, char *why, size_t len)
{
	struct ufs_inherit *in = &d->handover.inherit;
	const char *pt_why;
	int ret;

	ret = ufs_record_attach(&d->record, in->record_fd, why, len);
	if (ret)
		return ret;
	in->record_fd = -1;
	ret = check_mount(d, d->record.hdr, why, len);
	if (!ret)
		ret = check_init(d, d->record.hdr, why, len);
	if (ret)
		return ret;

	d->fuse_fd = in->fuse_fd;
	d->mnt.fd = in->fuse_fd;
	in->fuse_fd = -1;
	ufs_fs_set_record(&d->fs, &d->record);
	if (ufs_io_path_start(&d->fs, d->fuse_fd, &pt_why) != UFS_PT_ON &&
	    d->conn.passthrough)
		ufs_info("passthrough: off (%s)", pt_why);
	ret = restore_nodes(d, why, len);
	if (!ret)
		ret = restore_locks(d, why, len);
	if (ret)
		return ret;
	restore_files(d);
	__atomic_fetch_add(&d->record.hdr->restarts, 1, __ATOMIC_RELAXED);
	return 0;
}
