// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Namespace and attribute operations: LOOKUP, FORGET, GETATTR, SETATTR,
 * READLINK, SYMLINK, MKNOD, MKDIR, UNLINK, RMDIR, RENAME(2), LINK, STATFS,
 * ACCESS, SYNCFS (STATX: fs_statx.c).  Metadata calls are synchronous on
 * every transport.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "creds.h"
#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_shared.h"
#include "log.h"
#include "init_negotiate.h"

#define FUSE_RENAME_FLAGS (RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT)

static int stat_inode(struct ufs_inode *inode, struct stat *st)
{
	return fstatat(inode->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

/*
 * LOOKUP "." comes only from file handles (fuse_get_dentry), for a node id
 * of any type whose inode the kernel no longer has: the inode itself.
 */
static ssize_t lookup_self(struct ufs_fs *fs, struct ufs_inode *inode, struct fuse_entry_out *e)
{
	struct stat st;
	int ret;

	if (inode->control) {
		ufs_control_stat(fs, &st);
	} else {
		ret = stat_inode(inode, &st);
		if (ret)
			return ret;
	}
	ufs_inode_add_lookup(&fs->inodes, inode);
	ufs_fill_entry(fs, e, inode, &st);
	return sizeof(*e);
}

ssize_t ufs_op_lookup(struct ufs_fs *fs, struct ufs_req *req)
{
	struct fuse_entry_out *e = req->out;
	int ret;

	if (!strcmp(req->args.name, "."))
		return lookup_self(fs, req->inode, e);
	if (req->inode->type != S_IFDIR)
		return -ENOTDIR;
	ret = ufs_do_lookup(fs, req->inode, req->args.name, e);
	if (ret == -ENOENT && ufs_negative_timeout(fs, req->inode) > 0) {
		double t = ufs_negative_timeout(fs, req->inode);

		/* nodeid 0: the kernel caches the name as negative for entry_valid. */
		memset(e, 0, sizeof(*e));
		e->entry_valid = ufs_timeout_sec(t);
		e->entry_valid_nsec = ufs_timeout_nsec(t);
		return sizeof(*e);
	}
	return ret ? ret : (ssize_t)sizeof(*e);
}

ssize_t ufs_op_forget(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_forget_in *in = req->args.op;

	ufs_inode_forget(&fs->inodes, req->in->nodeid, in->nlookup);
	return 0;
}

ssize_t ufs_op_batch_forget(struct ufs_fs *fs, struct ufs_req *req)
{
	for (uint32_t i = 0; i < req->args.forget_count; i++) {
		struct fuse_forget_one one;

		memcpy(&one, &req->args.forgets[i], sizeof(one));
		ufs_inode_forget(&fs->inodes, one.nodeid, one.nlookup);
	}
	return 0;
}

ssize_t ufs_op_getattr(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_getattr_in *in = req->args.op;
	struct ufs_file *file = NULL;
	struct stat st;
	int ret;

	if (req->inode->control) {
		ufs_control_stat(fs, &st);
		ufs_fill_attr_out(fs, req->out, req->inode, &st);
		return sizeof(struct fuse_attr_out);
	}
	ret = ufs_inode_dir_beneath(&fs->inodes, req->inode);
	if (ret)
		return ret;
	if (in->getattr_flags & FUSE_GETATTR_FH)
		file = ufs_file_lookup(&fs->files, in->fh);
	if (file && file->fd >= 0)
		ret = fstat(file->fd, &st) ? -errno : 0;
	else
		ret = stat_inode(req->inode, &st);
	if (ret)
		return ret;
	ufs_fill_attr_out(fs, req->out, req->inode, &st);
	return sizeof(struct fuse_attr_out);
}

static struct timespec setattr_time(uint32_t valid, uint32_t set, uint32_t now, uint64_t sec,
				    uint32_t nsec)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = UTIME_OMIT };

	if (valid & now)
		ts.tv_nsec = UTIME_NOW;
	else if (valid & set) {
		ts.tv_sec = sec;
		ts.tv_nsec = nsec;
	}
	return ts;
}

static int setattr_truncate(struct ufs_fs *fs, struct ufs_inode *inode, struct ufs_file *file,
			    uint64_t size)
{
	int fd, ret;

	if (inode->type == S_IFDIR)
		return -EISDIR;
	if (inode->type != S_IFREG)
		return -EINVAL;
	if (file && !inode->control && (file->flags & O_ACCMODE) != O_RDONLY) {
		/* A passed-through open has none of its own. */
		fd = ufs_file_fd(fs, file, true);
		if (fd < 0)
			return fd;
		ret = ftruncate(fd, size) ? -errno : 0;
		ufs_file_fd_put(file, fd);
		return ret;
	}
	fd = ufs_reopen(fs, inode, O_WRONLY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	ret = ftruncate(fd, size) ? -errno : 0;
	close(fd);
	return ret;
}

ssize_t ufs_op_setattr(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_setattr_in *in = req->args.op;
	struct ufs_inode *inode = req->inode;
	struct ufs_file *file = NULL;
	uint32_t valid = in->valid;
	struct stat st, before;
	char name[32];
	int ret;

	if (inode->control)
		return -EPERM;
	ret = ufs_inode_dir_beneath(&fs->inodes, inode);
	if (ret)
		return ret;
	if (valid & FATTR_FH)
		file = ufs_file_lookup(&fs->files, in->fh);
	if (ufs_proc_name(inode, name, sizeof(name)))
		return -EBADF;
	/* The setgid rule looks at the group the file had before a chown. */
	if ((valid & FATTR_KILL_SUIDGID) && stat_inode(inode, &before))
		valid &= ~FATTR_KILL_SUIDGID;

	if (valid & FATTR_MODE) {
		/* chmod of a symlink is refused by Linux; the kernel never asks. */
		if (inode->type == S_IFLNK)
			return -EOPNOTSUPP;
		if (fchmodat(fs->confine.proc_fd, name, in->mode & 07777, 0))
			return -errno;
	}
	if (valid & (FATTR_UID | FATTR_GID)) {
		uid_t uid = valid & FATTR_UID ? in->uid : (uid_t)-1;
		gid_t gid = valid & FATTR_GID ? in->gid : (gid_t)-1;

		if (fchownat(inode->fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	if (valid & FATTR_SIZE) {
		ret = setattr_truncate(fs, inode, file, in->size);
		if (ret)
			return ret;
	}
	if ((valid & FATTR_KILL_SUIDGID) && inode->type == S_IFREG &&
	    !(valid & FATTR_MODE) && !stat_inode(inode, &st)) {
		st.st_gid = before.st_gid;
		/* chown sends the flag whoever calls; truncate only without CAP_FSETID. */
		ret = ufs_kill_suidgid(fs, req, inode, &st, valid & (FATTR_UID | FATTR_GID));
		if (ret)
			return ret;
	}
	if (valid & (FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW)) {
		struct timespec ts[2] = {
			setattr_time(valid, FATTR_ATIME, FATTR_ATIME_NOW, in->atime, in->atimensec),
			setattr_time(valid, FATTR_MTIME, FATTR_MTIME_NOW, in->mtime, in->mtimensec),
		};

		if (utimensat(inode->fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
			return -errno;
	}
	/* FATTR_CTIME: ctime follows the other changes; nothing sets it directly. */

	ret = stat_inode(inode, &st);
	if (ret)
		return ret;
	ufs_fill_attr_out(fs, req->out, req->inode, &st);
	return sizeof(struct fuse_attr_out);
}

ssize_t ufs_op_readlink(struct ufs_fs *fs, struct ufs_req *req)
{
	ssize_t n;

	(void)fs;
	if (req->inode->type != S_IFLNK)
		return -EINVAL;
	n = readlinkat(req->inode->fd, "", req->out, req->out_cap);
	return n < 0 ? -errno : n;
}

/*
 * The tail of every creating call: look the new name up (as the daemon,
 * after the caller's credentials are gone) and reply its entry.
 */
static ssize_t reply_new_entry(struct ufs_fs *fs, struct ufs_req *req, int ret, mode_t type,
			       const struct stat *link_of)
{
	struct fuse_entry_out *e = req->out;

	if (ret == -EEXIST && ufs_replay_made(fs, req, req->inode->fd, req->args.name, type, link_of))
		ret = 0;	/* made before a crash: answer with what was made */
	if (ret)
		return ret;
	ret = ufs_do_lookup(fs, req->inode, req->args.name, e);
	return ret ? ret : (ssize_t)sizeof(*e);
}

/* A parent for a name-based change: a directory that is still inside SOURCE. */
static int parent_check(struct ufs_fs *fs, struct ufs_inode *parent, const char *name)
{
	if (parent->type != S_IFDIR)
		return -ENOTDIR;
	if (ufs_is_control_name(fs, parent, name))
		return -EPERM;
	return ufs_inode_check_beneath(&fs->inodes, parent);
}

ssize_t ufs_op_mknod(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_mknod_in *in = req->args.op;
	struct ufs_creds creds;
	int ret;

	ret = parent_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret)
		return ret;
	ufs_umask_enter(fs, in->umask);
	/* rdev arrives in the kernel's new_encode_dev() format. */
	ret = mknodat(req->inode->fd, req->args.name, ufs_creds_mode(&creds, in->mode),
		      makedev((in->rdev & 0xfff00) >> 8, (in->rdev & 0xff) | ((in->rdev >> 12) & 0xfff00)))
		      ? -errno : 0;
	ufs_umask_leave(fs);
	ufs_creds_leave(&creds);
	return reply_new_entry(fs, req, ret, in->mode & S_IFMT, NULL);
}

ssize_t ufs_op_mkdir(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_mkdir_in *in = req->args.op;
	struct ufs_creds creds;
	int ret;

	ret = parent_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret)
		return ret;
	ufs_umask_enter(fs, in->umask);
	ret = mkdirat(req->inode->fd, req->args.name, ufs_creds_mode(&creds, in->mode)) ? -errno : 0;
	ufs_umask_leave(fs);
	ufs_creds_leave(&creds);
	return reply_new_entry(fs, req, ret, S_IFDIR, NULL);
}

ssize_t ufs_op_symlink(struct ufs_fs *fs, struct ufs_req *req)
{
	struct ufs_creds creds;
	int ret;

	ret = parent_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret)
		return ret;
	/* The target is stored verbatim; the daemon never follows it. */
	ret = symlinkat(req->args.name2, req->inode->fd, req->args.name) ? -errno : 0;
	ufs_creds_leave(&creds);
	return reply_new_entry(fs, req, ret, S_IFLNK, NULL);
}

ssize_t ufs_op_link(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_link_in *in = req->args.op;
	struct ufs_inode *target;
	struct stat st = { 0 };
	char name[32];
	int ret;

	ret = parent_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	target = ufs_inode_get(&fs->inodes, in->oldnodeid);
	if (!target)
		return -ESTALE;
	if (target->control) {
		ufs_inode_put(&fs->inodes, target);
		return -EPERM;
	}
	/*
	 * A link makes no inode, so it runs as the daemon (see creds.c): the
	 * kernel has checked the caller's write access to the directory and
	 * protected_hardlinks.  Link the inode itself, not a name:
	 * /proc/self/fd/N with AT_SYMLINK_FOLLOW lands on the inode, a symlink
	 * included.
	 */
	ret = ufs_proc_name(target, name, sizeof(name));
	if (!ret)
		ret = linkat(fs->confine.proc_fd, name, req->inode->fd, req->args.name, AT_SYMLINK_FOLLOW)
			      ? -errno : 0;
	st.st_dev = target->dev;
	st.st_ino = target->ino;
	ufs_inode_put(&fs->inodes, target);
	return reply_new_entry(fs, req, ret, 0, &st);
}

/*
 * What name in dir is now, if the inode store has it (pinned), or NULL:
 * after a call that may remove that name, the inode's own descriptor
 * tells whether the file lost its last link.  A link count taken before
 * the call would race a link made meanwhile.  A directory, or a file the
 * store has no descriptor of, leaves nothing to close or wait for.
 */
static struct ufs_inode *hold_name(struct ufs_fs *fs, int dir, const char *name)
{
	struct stat st;

	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode))
		return NULL;
	return ufs_inode_get_by_key(&fs->inodes, st.st_dev, st.st_ino);
}

/*
 * The held file lost a name: the inode store closes its descriptor when it
 * can (ufs_inode_unlinked), and ours goes now.
 *
 * With its last name gone, what still pins the inode may be a file the
 * caller closed before this call: the kernel sends RELEASE in the
 * background (fs/fuse/file.c: fuse_file_release), queued ahead of this
 * request, and another worker may have it and not be done: over /dev/fuse
 * any other, over io_uring the worker of the CPU the caller closed on, if
 * it moved before its unlink.  Locally the space is free when unlink()
 * returns: so it is here, once no other worker holds a RELEASE of the file
 * (the last put closes our descriptor), or the file is no longer pinned;
 * up to RELEASE_WAIT_MS (a close that flushes to a slow server).  A file
 * still open costs the moment a worker given requests takes to say which,
 * or a ring worker the rest of the batch it serves.  Not covered: a
 * RELEASE still in the kernel's background queue (more than
 * max_background requests in flight, or a ring queue with every entry
 * busy), or held by a worker itself waiting here.
 */
#define RELEASE_WAIT_MS 500

struct held {
	struct ufs_fs *fs;
	struct ufs_inode *inode;
};

static bool held_released(void *arg)
{
	const struct held *h = arg;

	return !ufs_inode_pinned_by_others(&h->fs->inodes, h->inode);
}

static void release_held(struct ufs_fs *fs, struct ufs_inode *held, bool removed)
{
	struct held h = { .fs = fs };
	struct stat st;

	if (!held)
		return;
	/* Pinned: its descriptor stays until the put below. */
	if (removed && !fstat(held->fd, &st))
		h.inode = ufs_inode_unlinked(&fs->inodes, held->dev, held->ino, st.st_nlink);
	ufs_inode_put(&fs->inodes, held);
	if (!h.inode)
		return;
	if (fs->await_release && !fs->await_release(fs->upcall_arg, h.inode->nodeid, held_released,
						    &h, RELEASE_WAIT_MS))
		ufs_log_once(UFS_LOG_INFO, "an unlink waited %d ms for a RELEASE of its file on "
			     "another worker and replied before it was done", RELEASE_WAIT_MS);
	ufs_inode_put(&fs->inodes, h.inode);
}

static ssize_t remove_entry(struct ufs_fs *fs, struct ufs_req *req, int flags)
{
	int ret = parent_check(fs, req->inode, req->args.name);
	struct ufs_inode *held;

	if (ret)
		return ret;
	held = flags & AT_REMOVEDIR ? NULL : hold_name(fs, req->inode->fd, req->args.name);
	ret = unlinkat(req->inode->fd, req->args.name, flags) ? -errno : 0;
	release_held(fs, held, !ret);
	return ret == -ENOENT && req->replay ? 0 : ret;	/* removed before a crash */
}

ssize_t ufs_op_unlink(struct ufs_fs *fs, struct ufs_req *req)
{
	return remove_entry(fs, req, 0);
}

ssize_t ufs_op_rmdir(struct ufs_fs *fs, struct ufs_req *req)
{
	return remove_entry(fs, req, AT_REMOVEDIR);
}

/*
 * A file renamed to another directory is found there again by its handle
 * (export.c); without export records nothing asks where it went.
 */
static void note_moved(struct ufs_fs *fs, struct ufs_inode *dir, const char *name)
{
	struct stat st;

	if (fs->inodes.exports.limit && !fstatat(dir->fd, name, &st, AT_SYMLINK_NOFOLLOW) &&
	    !S_ISDIR(st.st_mode))
		ufs_inode_moved(&fs->inodes, st.st_dev, st.st_ino, dir->nodeid);
}

static ssize_t do_rename(struct ufs_fs *fs, struct ufs_req *req, uint64_t newdir_id,
			 unsigned int flags)
{
	struct ufs_inode *newdir;
	struct ufs_creds creds = { 0 };
	int ret;

	if (flags & ~FUSE_RENAME_FLAGS)
		return -EINVAL;
	ret = parent_check(fs, req->inode, req->args.name);
	if (ret)
		return ret;
	newdir = ufs_inode_get(&fs->inodes, newdir_id);
	if (!newdir)
		return -ESTALE;
	ret = parent_check(fs, newdir, req->args.name2);
	/* A whiteout is a new inode: create it as the caller (creds.c). */
	if (!ret && (flags & RENAME_WHITEOUT))
		ret = ufs_creds_enter(fs, req, &creds);
	if (!ret) {
		/* A rename over a last link frees the file it replaces. */
		struct ufs_inode *held = flags & RENAME_EXCHANGE ? NULL :
					  hold_name(fs, newdir->fd, req->args.name2);

		ret = renameat2(req->inode->fd, req->args.name, newdir->fd, req->args.name2, flags)
			      ? -errno : 0;
		ufs_creds_leave(&creds);
		release_held(fs, held, !ret);
		if (!ret && req->inode != newdir)
			note_moved(fs, newdir, req->args.name2);
		if (!ret && req->inode != newdir && (flags & RENAME_EXCHANGE))
			note_moved(fs, req->inode, req->args.name);
	}
	ufs_inode_put(&fs->inodes, newdir);
	return ret == -ENOENT && req->replay ? 0 : ret;	/* renamed before a crash */
}

ssize_t ufs_op_rename(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_rename_in *in = req->args.op;

	return do_rename(fs, req, in->newdir, 0);
}

ssize_t ufs_op_rename2(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_rename2_in *in = req->args.op;

	return do_rename(fs, req, in->newdir, in->flags);
}

ssize_t ufs_op_statfs(struct ufs_fs *fs, struct ufs_req *req)
{
	struct fuse_statfs_out *out = req->out;
	struct statfs sf;

	(void)fs;
	if (fstatfs(req->inode->control ? fs->confine.root_fd : req->inode->fd, &sf))
		return -errno;
	memset(out, 0, sizeof(*out));
	out->st.blocks = sf.f_blocks;
	out->st.bfree = sf.f_bfree;
	out->st.bavail = sf.f_bavail;
	out->st.files = sf.f_files;
	out->st.ffree = sf.f_ffree;
	out->st.bsize = sf.f_bsize;
	out->st.namelen = sf.f_namelen;
	out->st.frsize = sf.f_frsize;
	return sizeof(*out);
}

ssize_t ufs_op_access(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_access_in *in = req->args.op;
	struct ufs_creds creds;
	char name[32];
	int ret;

	if (req->inode->control)
		return in->mask & (W_OK | X_OK) ? -EACCES : 0;
	if (ufs_proc_name(req->inode, name, sizeof(name)))
		return -EBADF;
	ret = ufs_creds_enter(fs, req, &creds);
	if (ret)
		return ret;
	/* AT_EACCESS: check with the fs identity we just took, not the real one. */
	ret = faccessat(fs->confine.proc_fd, name, in->mask, AT_EACCESS) ? -errno : 0;
	ufs_creds_leave(&creds);
	return ret;
}

ssize_t ufs_op_syncfs(struct ufs_fs *fs, struct ufs_req *req)
{
	int fd, ret;

	(void)req;
	/* syncfs() refuses O_PATH descriptors. */
	fd = ufs_reopen(fs, fs->inodes.root, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return fd;
	ret = syncfs(fd) ? -errno : 0;
	close(fd);
	return ret;
}
