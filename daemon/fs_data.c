// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data of open files: READ, WRITE, FSYNC, FALLOCATE, LSEEK,
 * COPY_FILE_RANGE(_64), IOCTL.
 *
 * READ, WRITE, FSYNC, FALLOCATE and COPY_FILE_RANGE describe their work in
 * req->io and hand it to the worker's I/O engine (io.c for /dev/fuse, the
 * worker's ring for io_uring), so that a slow backing file never holds up
 * the other requests a worker serves.  The reply goes out from the
 * completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "caller.h"
#include "creds.h"
#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_shared.h"
#include "log.h"
#include "init_negotiate.h"
#include "worker.h"

#define MAX_RW_COUNT (INT_MAX & ~4095L)	/* the kernel's per-call limit */

static struct ufs_file *file_get(struct ufs_fs *fs, uint64_t fh)
{
	return ufs_file_lookup(&fs->files, fh);
}


static void count_bytes(struct ufs_req *req, uint64_t *(*pick)(struct ufs_stats *), ssize_t n)
{
	if (n > 0 && req->worker)
		ufs_stat_add(pick(&req->worker->stats), n);
}

static uint64_t *read_counter(struct ufs_stats *st)
{
	return &st->read_bytes;
}

static uint64_t *write_counter(struct ufs_stats *st)
{
	return &st->write_bytes;
}

/*
 * The client may switch O_DIRECT on an open file (fcntl F_SETFL); READ and
 * WRITE carry its current flags.  With backing_direct_io the backing
 * descriptor follows, so the backing file sees the client's choice.
 */
static void follow_client_direct(struct ufs_fs *fs, struct ufs_file *file, uint32_t flags)
{
	int want = flags & O_DIRECT, have = file->flags & O_DIRECT;

	if (!fs->cfg->backing_direct_io || want == have)
		return;
	if (fcntl(file->fd, F_SETFL, (file->flags & ~O_ACCMODE & ~O_DIRECT) | want))
		return;	/* keep what we have: the read still works */
	__atomic_store_n(&file->flags, (file->flags & ~O_DIRECT) | want, __ATOMIC_RELAXED);
}

/*
 * A passed-through open keeps no descriptor (fs_open.c): a request on it
 * that needs one gets the file opened again (ufs_file_fd), kept until its
 * I/O is done.
 */
static void own_fds_done(struct ufs_req *req, ssize_t res)
{
	struct ufs_io *io = &req->io;

	for (int i = 0; i < 2; i++) {
		if (io->own_fd[i] >= 0)
			close(io->own_fd[i]);
		io->own_fd[i] = -1;
	}
	io->then(req, res);
}

/* Make the I/O just set up close the descriptors it opened (if any). */
static void own_fds(struct ufs_req *req, struct ufs_file *a, int fd_a, struct ufs_file *b, int fd_b)
{
	struct ufs_io *io = &req->io;

	io->own_fd[0] = a && fd_a != a->fd ? fd_a : -1;
	io->own_fd[1] = b && fd_b != b->fd && fd_b != fd_a ? fd_b : -1;
	if (io->own_fd[0] < 0 && io->own_fd[1] < 0)
		return;
	io->then = io->done;
	io->done = own_fds_done;
}

static void read_done(struct ufs_req *req, ssize_t res)
{
	count_bytes(req, read_counter, res);
	ufs_req_complete(req, res);
}

ssize_t ufs_op_read(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_read_in *in = req->args.op;
	struct ufs_file *file = file_get(fs, in->fh);

	int fd;

	if (!file || file->is_dir)
		return -EBADF;
	if (file->inode->control)
		return ufs_control_read(fs, req, file, in->offset, in->size);
	fd = ufs_file_fd(fs, file, false);
	if (fd < 0)
		return fd;
	if (fd == file->fd)
		follow_client_direct(fs, file, in->flags);
	req->io = (struct ufs_io){
		.op = UFS_IO_READ,
		.fd = fd,
		.off = in->offset,
		.buf = req->out,
		.len = in->size < req->out_cap ? in->size : req->out_cap,
		.bounce = (file->flags & O_DIRECT) != 0,
		.done = read_done,
	};
	own_fds(req, file, fd, NULL, -1);
	req->xops->io_submit(req);
	return -UFS_EQUEUED;
}

static void write_done(struct ufs_req *req, ssize_t res)
{
	struct fuse_write_out *out = req->out;

	if (res < 0) {
		ufs_req_complete(req, res);
		return;
	}
	count_bytes(req, write_counter, res);
	memset(out, 0, sizeof(*out));
	out->size = res;
	ufs_req_complete(req, sizeof(*out));
}

/*
 * Whose limits a data call meets (ident.c): the caller's, read from its
 * /proc entry, or the opener's (from_cache, or no caller).  A caller with
 * the opener's ids takes the opener's record when that holds no
 * CAP_SYS_RESOURCE: no /proc read per write, and at worst fewer rights
 * (a process with CAP_SYS_RESOURCE writing through another's descriptor).
 */
static void writer_ident(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
			 bool from_cache, struct ufs_ident *who)
{
	const struct ufs_ident *o = &file->opener;

	if (from_cache || !req->in->pid) {
		ufs_ident_of(fs, req, file, who);
		return;
	}
	if (file->opener_known && o->set && !o->sys_resource && o->uid == req->in->uid &&
	    o->gid == req->in->gid) {
		*who = *o;
		return;
	}
	ufs_ident_of(fs, req, NULL, who);
}

ssize_t ufs_op_write(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_write_in *in = req->args.op;
	struct ufs_file *file = file_get(fs, in->fh);
	struct stat st;
	int fd;

	if (!file || file->is_dir || file->inode->control)
		return -EBADF;
	fd = ufs_file_fd(fs, file, true);
	if (fd < 0)
		return fd;
	/* A write by a client without CAP_FSETID drops setuid/setgid, as locally. */
	if ((in->write_flags & FUSE_WRITE_KILL_SUIDGID) && !fstat(fd, &st))
		ufs_kill_suidgid(fs, req, file->inode, &st, false);
	if (fd == file->fd)
		follow_client_direct(fs, file, in->flags);
	req->io = (struct ufs_io){
		.op = UFS_IO_WRITE,
		.fd = fd,
		.off = in->offset,
		.buf = (void *)req->args.data,
		.len = req->args.data_len,
		.bounce = (file->flags & O_DIRECT) != 0,
		.done = write_done,
	};
	/*
	 * The kernel writes its page cache back with credentials of its own
	 * (none, or a flusher's, by kernel version): the opener pays.
	 */
	writer_ident(fs, req, file, in->write_flags & FUSE_WRITE_CACHE, &req->io.who);
	own_fds(req, file, fd, NULL, -1);
	req->xops->io_submit(req);
	return -UFS_EQUEUED;
}

/* FSYNC and FALLOCATE reply nothing but the status. */
static void status_done(struct ufs_req *req, ssize_t res)
{
	ufs_req_complete(req, res < 0 ? res : 0);
}

ssize_t ufs_op_fsync(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_fsync_in *in = req->args.op;
	struct ufs_file *file = file_get(fs, in->fh);

	int fd;

	if (!file)
		return -EBADF;
	if (file->inode->control)
		return 0;
	fd = ufs_file_fd(fs, file, false);
	if (fd < 0)
		return fd;
	req->io = (struct ufs_io){
		.op = in->fsync_flags & FUSE_FSYNC_FDATASYNC ? UFS_IO_FDATASYNC : UFS_IO_FSYNC,
		.fd = fd,
		.done = status_done,
	};
	own_fds(req, file, fd, NULL, -1);
	req->xops->io_submit(req);
	return -UFS_EQUEUED;
}

/*
 * fallocate and copy_file_range modify a file like a write, and locally a
 * writer without CAP_FSETID loses setuid/setgid.  With killpriv_v2 the kernel
 * leaves that to us but, unlike WRITE, sends no flag: the caller's own
 * capabilities say (caller.c).
 */
static void kill_suidgid_on_modify(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
				   int fd)
{
	struct stat st;

	if (!ufs_conn_has(fs->conn, FUSE_HANDLE_KILLPRIV_V2))
		return;
	if (!fstat(fd, &st) && (st.st_mode & (S_ISUID | S_ISGID)) &&
	    !ufs_caller_capable(req, CAP_FSETID))
		ufs_kill_suidgid(fs, req, file->inode, &st, false);
}

ssize_t ufs_op_fallocate(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_fallocate_in *in = req->args.op;
	struct ufs_file *file = file_get(fs, in->fh);

	int fd;

	if (!file || file->is_dir || file->inode->control)
		return -EBADF;
	fd = ufs_file_fd(fs, file, true);
	if (fd < 0)
		return fd;
	kill_suidgid_on_modify(fs, req, file, fd);
	req->io = (struct ufs_io){
		.op = UFS_IO_FALLOCATE,
		.fd = fd,
		.off = in->offset,
		.len = in->length,
		.mode = in->mode,
		.done = status_done,
	};
	writer_ident(fs, req, file, false, &req->io.who);
	own_fds(req, file, fd, NULL, -1);
	req->xops->io_submit(req);
	return -UFS_EQUEUED;
}


ssize_t ufs_op_lseek(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_lseek_in *in = req->args.op;
	struct ufs_file *file = file_get(fs, in->fh);
	struct fuse_lseek_out *out = req->out;
	off_t off;
	int fd;

	if (!file || file->inode->control)
		return -EBADF;
	fd = ufs_file_fd(fs, file, false);
	if (fd < 0)
		return fd;
	off = lseek(fd, in->offset, in->whence);
	if (off < 0)
		off = -errno;
	ufs_file_fd_put(file, fd);
	if (off < 0)
		return off;
	out->offset = off;
	return sizeof(*out);
}

static void copy_done_64(struct ufs_req *req, ssize_t res)
{
	struct fuse_copy_file_range_out *out = req->out;

	if (res < 0) {
		ufs_req_complete(req, res);
		return;
	}
	count_bytes(req, write_counter, res);
	out->bytes_copied = res;
	ufs_req_complete(req, sizeof(*out));
}

static ssize_t copy_file_range_start(struct ufs_fs *fs, struct ufs_req *req,
				     void (*done)(struct ufs_req *, ssize_t), uint64_t max)
{
	const struct fuse_copy_file_range_in *in = req->args.op;
	struct ufs_file *src = file_get(fs, in->fh_in);
	struct ufs_file *dst = file_get(fs, in->fh_out);
	int fd, fd_in;

	if (!src || !dst || src->inode->control || dst->inode->control || src->is_dir ||
	    dst->is_dir)
		return -EBADF;
	if (dst->inode->nodeid != in->nodeid_out)
		return -EINVAL;
	fd = ufs_file_fd(fs, dst, true);
	if (fd < 0)
		return fd;
	fd_in = ufs_file_fd(fs, src, false);
	if (fd_in < 0) {
		ufs_file_fd_put(dst, fd);
		return fd_in;
	}
	kill_suidgid_on_modify(fs, req, dst, fd);
	req->io = (struct ufs_io){
		.op = UFS_IO_COPY,
		.fd = fd,
		.off = in->off_out,
		.fd_in = fd_in,
		.off_in = in->off_in,
		.len = in->len < max ? in->len : max,
		.mode = (int)in->flags,
		.done = done,
	};
	writer_ident(fs, req, dst, false, &req->io.who);
	own_fds(req, dst, fd, src, fd_in);
	ufs_copy_start(&fs->copies, req);
	return -UFS_EQUEUED;
}

ssize_t ufs_op_copy_file_range_64(struct ufs_fs *fs, struct ufs_req *req)
{
	return copy_file_range_start(fs, req, copy_done_64, MAX_RW_COUNT);
}

/* The 7.28 opcode replies a 32-bit count in a fuse_write_out. */
static void copy_done_32(struct ufs_req *req, ssize_t res)
{
	struct fuse_write_out *out = req->out;

	if (res < 0) {
		ufs_req_complete(req, res);
		return;
	}
	count_bytes(req, write_counter, res);
	memset(out, 0, sizeof(*out));
	out->size = res;
	ufs_req_complete(req, sizeof(*out));
}

ssize_t ufs_op_copy_file_range(struct ufs_fs *fs, struct ufs_req *req)
{
	return copy_file_range_start(fs, req, copy_done_32, MAX_RW_COUNT);
}

/*
 * Only the inode attribute ioctls pass through (chattr, lsattr, xfs_io
 * chattr): any other would let a client reach the backing driver with
 * arguments the daemon cannot check.  The kernel sends these with exact
 * sizes (fuse_priv_ioctl), so the reply carries exactly out_size bytes.
 */
ssize_t ufs_op_ioctl(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_ioctl_in *in = req->args.op;
	struct ufs_file *file = in->fh ? ufs_file_lookup(&fs->files, in->fh) : NULL;
	struct fuse_ioctl_out *out = req->out;
	unsigned long cmd;
	union {
		int flags;
		struct fsxattr fsx;
	} arg = { 0 };
	size_t size;
	int fd, ret;

	/* fh 0: a directory opened without OPENDIR (fs_dir.c). */
	if (in->fh ? !file || file->inode->control : req->inode->type != S_IFDIR)
		return -EBADF;
	switch (in->cmd) {
	case FS_IOC_GETFLAGS:
	case FS_IOC32_GETFLAGS:
		cmd = FS_IOC_GETFLAGS;
		size = sizeof(arg.flags);
		break;
	case FS_IOC_SETFLAGS:
	case FS_IOC32_SETFLAGS:
		cmd = FS_IOC_SETFLAGS;
		size = sizeof(arg.flags);
		break;
	case FS_IOC_FSGETXATTR:
		cmd = FS_IOC_FSGETXATTR;
		size = sizeof(arg.fsx);
		break;
	case FS_IOC_FSSETXATTR:
		cmd = FS_IOC_FSSETXATTR;
		size = sizeof(arg.fsx);
		break;
	default:
		ufs_dbg("ioctl cmd=0x%x: not passed through, ENOTTY", in->cmd);
		return -ENOTTY;
	}
	if (in->in_size) {
		if (req->args.data_len < size)
			return -EINVAL;
		memcpy(&arg, req->args.data, size);
	}
	if (in->out_size && in->out_size < size)
		return -EINVAL;
	fd = file ? ufs_file_fd(fs, file, false) : ufs_dir_reopen(fs, req->inode);
	if (fd < 0)
		return fd;
	ret = ioctl(fd, cmd, &arg) ? -errno : 0;
	if (file)
		ufs_file_fd_put(file, fd);
	else
		close(fd);
	if (ret)
		return ret;
	/* Setting flags changes ctime (and S_APPEND...), which the kernel has cached. */
	if (cmd == FS_IOC_SETFLAGS || cmd == FS_IOC_FSSETXATTR)
		ufs_attr_stale(fs, file ? file->inode : req->inode);
	memset(out, 0, sizeof(*out));
	if (!in->out_size)
		return sizeof(*out);
	memcpy(out + 1, &arg, size);
	return sizeof(*out) + size;
}
