// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Opening and closing files: OPEN, CREATE, TMPFILE, FLUSH, RELEASE.
 *
 * An open that may have to wait for a lease to be broken waits on a helper
 * thread (wait.c); a CREATE that made the name but cannot answer removes it
 * again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "creds.h"
#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_file.h"
#include "fs_lock.h"
#include "fs_shared.h"
#include "inflight_state.h"
#include "io_path.h"
#include "log.h"
#include "wait.h"

/* The flags the backing file is opened with, from the client's open flags. */
static int backing_open_flags(struct ufs_fs *fs, int flags)
{
	/*
	 * O_NONBLOCK means nothing to a regular file but makes io_uring fail
	 * reads with EAGAIN instead of waiting: the client's choice is its own.
	 */
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
	/*
	 * With the writeback cache the kernel fills partial pages by reading
	 * and decides append offsets itself.
	 */
	if (fs->cfg->writeback_cache) {
		if ((flags & O_ACCMODE) == O_WRONLY)
			flags = (flags & ~O_ACCMODE) | O_RDWR;
		flags &= ~O_APPEND;
	}
	if (!fs->cfg->backing_direct_io)
		flags &= ~O_DIRECT;
	return flags;
}

/* The daemon path's flags; passthrough (passthrough.c) replaces them. */
static uint32_t open_reply_flags(struct ufs_fs *fs)
{
	uint32_t flags = FOPEN_PARALLEL_DIRECT_WRITES;

	if (fs->cfg->keep_cache)
		flags |= FOPEN_KEEP_CACHE;
	if (fs->zero_copy)
		flags |= FOPEN_IO_URING_ZERO_COPY;
	return flags;
}

/*
 * The descriptor an open will hold is charged to its caller before anything
 * is opened or made (budget.h); the file carries the charge from then on.
 */
static unsigned int open_cost(struct ufs_fs *fs)
{
	/* its own descriptor, and its inode's (ufs_file_pin) */
	return fs->inodes.handles.usable ? 2 : 1;
}

static int open_charge(struct ufs_fs *fs, struct ufs_req *req)
{
	return ufs_budget_charge(&fs->budget, req->caller_uid, open_cost(fs));
}

static void open_uncharge(struct ufs_fs *fs, struct ufs_req *req)
{
	ufs_budget_uncharge(&fs->budget, req->caller_uid, open_cost(fs));
}

/*
 * The kernel holds a passed-through open's backing file by its id from
 * BACKING_OPEN on and does its I/O itself: the daemon's descriptor would
 * only count against RLIMIT_NOFILE.  What still reaches the daemon for it
 * (FSYNC, FALLOCATE, locks, ioctls ...) opens it per request (ufs_file_fd).
 */
static void drop_descriptor(struct ufs_fs *fs, struct ufs_file *file)
{
	close(file->fd);
	file->fd = -1;
	if (file->charged)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
	file->charged = false;
}

/* The data path chosen, file registered and the open reply at out filled. */
static int open_reply(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
		      struct ufs_open_out *out)
{
	uint32_t open_flags = open_reply_flags(fs);
	int32_t backing_id;
	uint64_t fh;
	int ret;

	/* Whose limits its writeback and its passthrough writes meet (ident.c). */
	ufs_ident_of(fs, req, NULL, &file->opener);
	file->opener_known = true;
	ret = ufs_io_path_open(fs, req, file, &open_flags, &backing_id);
	/* A passed-through writer served by the daemon (FOPEN_DIRECT_IO) keeps it. */
	if (!ret && file->io_mode == UFS_IO_PASSTHROUGH && !(open_flags & FOPEN_DIRECT_IO))
		drop_descriptor(fs, file);
	if (!ret)
		ret = ufs_file_register(&fs->files, file, &fh);
	if (ret) {
		ufs_file_free(fs, file);
		return ret;
	}
	memset(out, 0, sizeof(*out));
	out->fh = fh;
	out->open_flags = open_flags;
	out->backing_id = backing_id;
	return 0;
}

/* fd is charged to the caller (open_charge): the file takes the charge over. */
static int open_file(struct ufs_fs *fs, struct ufs_req *req, struct ufs_inode *inode, int fd,
		     int flags, struct ufs_open_out *out)
{
	struct ufs_file *file = ufs_file_new(inode, fd, flags);

	if (!file) {
		close(fd);
		open_uncharge(fs, req);
		return -ENOMEM;
	}
	file->uid = req->caller_uid;
	file->charged = true;
	ufs_inode_ref(&fs->inodes, inode);
	ufs_file_pin(fs, file, open_cost(fs) > 1);
	return open_reply(fs, req, file, out);
}

/* The OPEN reply for the backing descriptor fd, opened with flags. */
static ssize_t open_finish(struct ufs_fs *fs, struct ufs_req *req, int fd, int flags)
{
	const struct fuse_open_in *in = req->args.op;
	struct stat st;
	int ret;

	/* O_TRUNC by a client without CAP_FSETID drops setuid/setgid (killpriv_v2). */
	if ((in->open_flags & FUSE_OPEN_KILL_SUIDGID) && (flags & O_TRUNC) && !fstat(fd, &st))
		ufs_kill_suidgid(fs, req, req->inode, &st, false);
	ret = open_file(fs, req, req->inode, fd, flags, req->out);
	return ret ? ret : (ssize_t)sizeof(struct ufs_open_out);
}

/*
 * An open waits while another process's lease on the backing file is being
 * broken, up to /proc/sys/fs/lease-break-time (45 s): as it would locally,
 * but on a helper thread of its own (wait.c), never on the worker.
 */
static ssize_t open_wait_run(struct ufs_req *req, void *arg)
{
	return ufs_reopen(req->fs, req->inode, *(int *)arg);
}

static ssize_t open_wait_done(struct ufs_req *req, void *arg, ssize_t fd)
{
	int flags = *(int *)arg;

	free(arg);
	if (fd < 0) {
		open_uncharge(req->fs, req);
		return fd;
	}
	return open_finish(req->fs, req, fd, flags);
}

static const struct ufs_wait_ops open_wait_ops = {
	.name = "an open behind a lease",
	.run = open_wait_run,
	.done = open_wait_done,
	.timeout_error = -EWOULDBLOCK,	/* as an O_NONBLOCK open would answer */
	.waits_for = UFS_INFLIGHT_WAIT_LEASE,
};

ssize_t ufs_op_open(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_open_in *in = req->args.op;
	struct ufs_inode *inode = req->inode;
	int flags, fd, *arg, ret;

	if (inode->control)
		return ufs_control_open(fs, req, in->flags);
	if (inode->type == S_IFDIR)
		return -EISDIR;
	flags = backing_open_flags(fs, in->flags);
	/* Before the open: an O_TRUNC must not truncate for a refused open. */
	ret = open_charge(fs, req);
	if (ret)
		return ret;
	/*
	 * O_NONBLOCK: a lease held on the file is broken, but the open does
	 * not wait for that (fs/locks.c: __break_lease); with no lease it
	 * changes nothing for a regular file.  Taken off again at once: it
	 * would make io_uring fail reads with EAGAIN.
	 */
	fd = ufs_reopen(fs, inode, flags | O_NONBLOCK);
	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)) {
		ret = -errno;
		close(fd);
		goto uncharge;
	}
	if (fd >= 0)
		return open_finish(fs, req, fd, flags);
	ret = fd;
	/* A lease in the way: the client's O_NONBLOCK says not to wait. */
	if (fd != -EWOULDBLOCK || (in->flags & O_NONBLOCK))
		goto uncharge;
	arg = malloc(sizeof(*arg));
	ret = -ENOMEM;
	if (!arg)
		goto uncharge;
	*arg = flags;
	ret = ufs_wait_start(&fs->waits, req, &open_wait_ops, arg);
	if (ret) {
		free(arg);
		goto uncharge;
	}
	return -UFS_EQUEUED;
uncharge:
	open_uncharge(fs, req);
	return ret;
}

/*
 * CREATE found the name taken (the kernel's negative dentry was stale).  Open
 * what is there only if it is a regular file, through its own descriptor:
 * following a name could open a symlink's target or a device.
 */
static int create_open_existing(struct ufs_fs *fs, struct ufs_inode *parent, const char *name,
				int flags)
{
	struct stat st;
	char proc[32];
	int pfd, fd;

	pfd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, &st)) {
		fd = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		fd = S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
	} else {
		snprintf(proc, sizeof(proc), "%d", pfd);
		fd = ufs_open_noatime(fs, fs->confine.proc_fd, proc, flags | O_CLOEXEC, 0);
	}
	close(pfd);
	return fd;
}

/* The inode for a descriptor we just created: O_PATH to the same file. */
static int inode_for_fd(struct ufs_fs *fs, int fd, struct stat *st, uint64_t parent,
			struct ufs_inode **out)
{
	char proc[32];
	int pfd;

	if (fstat(fd, st))
		return -errno;
	snprintf(proc, sizeof(proc), "%d", fd);
	pfd = openat(fs->confine.proc_fd, proc, O_PATH | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	return ufs_inode_find_or_insert(&fs->inodes, pfd, st, parent, out);
}

/*
 * The CREATE made name but cannot answer (out of descriptors or memory):
 * take the name away again, as an open(2) that fails creates nothing.
 * Only if it is still our new, empty file.
 */
static void create_undo(struct ufs_req *req, const struct stat *ours)
{
	struct stat now;

	if (ours->st_size || ours->st_nlink != 1 ||
	    fstatat(req->inode->fd, req->args.name, &now, AT_SYMLINK_NOFOLLOW) || now.st_size ||
	    now.st_dev != ours->st_dev || now.st_ino != ours->st_ino)
		return;
	if (unlinkat(req->inode->fd, req->args.name, 0))
		ufs_log_once(UFS_LOG_WARN, "could not remove a file whose CREATE failed: %m");
}

/* CREATE and TMPFILE reply an entry followed by an open reply. */
struct create_reply {
	struct fuse_entry_out entry;
	struct ufs_open_out open;
};

static ssize_t create_reply(struct ufs_fs *fs, struct ufs_req *req, int fd, int flags,
			    bool created)
{
	struct create_reply *out = req->out;
	struct ufs_inode *inode;
	struct stat st = { 0 };	/* no undo unless fstat says what we made */
	int ret;

	ret = inode_for_fd(fs, fd, &st, req->inode->nodeid, &inode);
	if (ret) {
		close(fd);
		open_uncharge(fs, req);
		goto undo;
	}
	ret = open_file(fs, req, inode, fd, flags, &out->open);
	if (ret) {
		ufs_inode_forget(&fs->inodes, inode->nodeid, 1);
		goto undo;
	}
	/* After the open: a writable passthrough open makes them uncacheable. */
	ufs_fill_entry(fs, &out->entry, inode, &st);
	return sizeof(*out);
undo:
	if (created)
		create_undo(req, &st);
	return ret;
}

static int parent_dir_check(struct ufs_fs *fs, struct ufs_inode *parent, const char *name)
{
	if (parent->type != S_IFDIR)
		return -ENOTDIR;
	if (name && ufs_is_control_name(fs, parent, name))
		return -EEXIST;
	return ufs_inode_check_beneath(&fs->inodes, parent);
}

ssize_t ufs_op_create(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_create_in *in = req->args.op;
	struct ufs_creds creds;
	int flags, fd, ret;
	bool created;

	ret = parent_dir_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	flags = backing_open_flags(fs, in->flags);
	/* Refused before the file is made: a failed open(2) creates nothing. */
	ret = open_charge(fs, req);
	if (ret)
		return ret;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret) {
		open_uncharge(fs, req);
		return ret;
	}
	ufs_umask_enter(fs, in->umask);
	/* Always O_EXCL|O_NOFOLLOW first, so no existing name is followed. */
	fd = ufs_open_noatime(fs, req->inode->fd, req->args.name,
			      flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      ufs_creds_mode(&creds, in->mode));
	created = fd >= 0;
	/* A replayed O_EXCL create finds the file it made before a crash. */
	if (fd == -EEXIST && (!(in->flags & O_EXCL) ||
			      ufs_replay_made(fs, req, req->inode->fd, req->args.name, S_IFREG, NULL)))
		fd = create_open_existing(fs, req->inode, req->args.name, flags);
	ufs_umask_leave(fs);
	ufs_creds_leave(&creds);
	if (fd < 0) {
		open_uncharge(fs, req);
		return fd;
	}
	return create_reply(fs, req, fd, flags, created);
}

ssize_t ufs_op_tmpfile(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_create_in *in = req->args.op;
	struct ufs_creds creds;
	int flags, fd, ret;

	ret = parent_dir_check(fs, req->inode, NULL);
	if (ret)
		return ret;
	flags = (backing_open_flags(fs, in->flags) & ~O_DIRECTORY) | O_TMPFILE;
	ret = open_charge(fs, req);
	if (ret)
		return ret;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret) {
		open_uncharge(fs, req);
		return ret;
	}
	ufs_umask_enter(fs, in->umask);
	fd = ufs_open_noatime(fs, req->inode->fd, ".", flags | O_CLOEXEC,
			      ufs_creds_mode(&creds, in->mode));
	ufs_umask_leave(fs);
	ufs_creds_leave(&creds);
	if (fd < 0) {
		open_uncharge(fs, req);
		return fd;
	}
	return create_reply(fs, req, fd, flags, false);
}

ssize_t ufs_op_flush(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_flush_in *in = req->args.op;
	struct ufs_file *file = ufs_file_lookup(&fs->files, in->fh);
	int fd;

	if (!file)
		return -EBADF;
	if (file->inode->control)
		return 0;
	/* close(2) of the client's descriptor drops its POSIX locks. */
	ufs_lock_release_owner(fs, file->inode, in->lock_owner);
	/*
	 * Close a duplicate (or, for a passed-through open, the file opened
	 * again) so the backing file system sees the close (NFS writes back
	 * and reports errors on close).  A close(2) never fails for want of a
	 * descriptor: without one to spare, fsync of our own does that work.
	 */
	fd = file->fd >= 0 ? fcntl(file->fd, F_DUPFD_CLOEXEC, 0) : ufs_file_fd(fs, file, false);
	if (fd < 0 && file->fd >= 0)
		fd = -errno;
	if (fd == -EMFILE || fd == -ENFILE)
		return file->fd >= 0 && fsync(file->fd) ? -errno : 0;
	if (fd < 0)
		return fd;
	return close(fd) ? -errno : 0;
}

ssize_t ufs_op_release(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_release_in *in = req->args.op;
	struct ufs_file *file = ufs_file_unregister(&fs->files, in->fh);

	if (!file)
		return -EBADF;
	ufs_lock_release_fh(file->inode, in->fh);
	/* Closing our descriptor releases its flock (FUSE_RELEASE_FLOCK_UNLOCK). */
	ufs_file_free(fs, file);
	return 0;
}
