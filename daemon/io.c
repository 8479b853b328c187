// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Synchronous execution of a request's data operation.
 */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>

#include "ident.h"
#include "io.h"

bool ufs_io_progress(struct ufs_io *io, ssize_t res, ssize_t *res_out)
{
	if (res < 0) {
		/* An error after partial progress reports the progress, as read(2) does. */
		*res_out = io->done_bytes ? (ssize_t)io->done_bytes : res;
		return true;
	}
	io->done_bytes += res;
	if (!res || io->done_bytes >= io->len) {
		*res_out = io->done_bytes;
		return true;
	}
	return false;
}

static ssize_t io_step(struct ufs_io *io)
{
	char *buf = (char *)io->buf + io->done_bytes;
	size_t left = io->len - io->done_bytes;
	off_t off = io->off + io->done_bytes;
	ssize_t n;

	switch (io->op) {
	case UFS_IO_READ:
		n = pread(io->fd, buf, left, off);
		break;
	case UFS_IO_WRITE:
		n = pwrite(io->fd, buf, left, off);
		break;
	case UFS_IO_FSYNC:
		return fsync(io->fd) ? -errno : 0;
	case UFS_IO_FDATASYNC:
		return fdatasync(io->fd) ? -errno : 0;
	case UFS_IO_FALLOCATE:
		return fallocate(io->fd, io->mode, io->off, io->len) ? -errno : 0;
	default:
		return -EINVAL;
	}
	return n < 0 ? -errno : n;
}

void ufs_io_run_sync(struct ufs_req *req)
{
	struct ufs_io *io = &req->io;
	struct ufs_ident_saved saved;
	ssize_t res;

	/* Space goes on the writer's account (ident.c); reads and syncs use none. */
	saved.switched = false;
	if (io->op == UFS_IO_WRITE || io->op == UFS_IO_FALLOCATE) {
		res = ufs_ident_enter(&io->who, 0, &saved);
		if (res) {
			io->done(req, res);
			return;
		}
	}
	io->done_bytes = 0;
	for (;;) {
		res = io_step(io);
		if (res == -EINTR)
			continue;
		if (io->op != UFS_IO_READ && io->op != UFS_IO_WRITE)
			break;
		if (ufs_io_progress(io, res, &res))
			break;
	}
	ufs_ident_leave(&saved);
	io->done(req, res);
}
