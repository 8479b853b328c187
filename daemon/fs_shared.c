// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the passthrough file system's handlers share: reopening an inode
 * for I/O, attribute and entry replies, the lookup itself, set-id bits and
 * the caller's umask.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "caller.h"
#include "creds.h"
#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_shared.h"
#include "inode_prune.h"
#include "log.h"
#include "init_negotiate.h"

uint64_t ufs_timeout_sec(double t)
{
	return (uint64_t)t;
}

uint32_t ufs_timeout_nsec(double t)
{
	return (uint32_t)((t - floor(t)) * 1e9);
}

/* "N" for /proc/self/fd/N, the inode's own descriptor as a path. */
int ufs_proc_name(const struct ufs_inode *inode, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%d", inode->fd);

	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/*
 * Opens an inode for I/O through its own descriptor, never by name, so no
 * symlink or rename can redirect it.  Only regular files and directories:
 * opening a device node could reach a host device and opening a FIFO could
 * block the worker.
 */
int ufs_reopen(struct ufs_fs *fs, struct ufs_inode *inode, int flags)
{
	char name[32];

	if (inode->type != S_IFREG && inode->type != S_IFDIR)
		return -ENXIO;
	if (ufs_proc_name(inode, name, sizeof(name)))
		return -EBADF;
	flags &= ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW | O_PATH);
	if (inode->type == S_IFDIR)
		flags |= O_DIRECTORY;
	return ufs_open_noatime(fs, fs->confine.proc_fd, name, flags | O_CLOEXEC, 0);
}

/*
 * fh 0: a directory the kernel opened without OPENDIR (fs_dir.c), opened
 * again for one request; -errno if it cannot be.
 */
int ufs_dir_reopen(struct ufs_fs *fs, struct ufs_inode *inode)
{
	int ret;

	if (inode->type != S_IFDIR)
		return -EBADF;
	ret = ufs_inode_dir_beneath(&fs->inodes, inode);
	if (ret)
		return ret;
	return ufs_reopen(fs, inode, O_RDONLY | O_DIRECTORY);
}

/*
 * A descriptor for one request on file: its own, or (a passed-through open
 * keeps none: the kernel holds the backing file by its id) the file opened
 * again with the flags of its open.  Give it back with ufs_file_fd_put().
 * A request that does not write (fsync, lseek, an ioctl, a flock) takes a
 * read-only one where the file may no longer be opened for writing
 * (chattr +i since the open): natively its descriptor still works.
 */
int ufs_file_fd(struct ufs_fs *fs, struct ufs_file *file, bool write)
{
	int flags = file->flags & ~(O_TRUNC | O_CREAT | O_EXCL | O_TMPFILE);
	int fd = __atomic_load_n(&file->fd, __ATOMIC_ACQUIRE);

	if (fd >= 0 || file->inode->control)
		return fd >= 0 ? fd : -EBADF;
	fd = ufs_reopen(fs, file->inode, flags);
	if (!write && (flags & O_ACCMODE) != O_RDONLY &&
	    (fd == -EPERM || fd == -EACCES || fd == -ETXTBSY || fd == -EROFS))
		fd = ufs_reopen(fs, file->inode, (flags & ~(O_ACCMODE | O_APPEND)) | O_RDONLY);
	return fd;
}

void ufs_file_fd_put(struct ufs_file *file, int fd)
{
	if (fd >= 0 && fd != __atomic_load_n(&file->fd, __ATOMIC_ACQUIRE))
		close(fd);
}

/*
 * A descriptor that stays with the file from now on (a flock lives on its
 * open file description), charged to the opener; 0 or -errno.
 */
int ufs_file_fd_keep(struct ufs_fs *fs, struct ufs_file *file)
{
	int fd, none = -1, ret;

	if (__atomic_load_n(&file->fd, __ATOMIC_ACQUIRE) >= 0)
		return 0;
	if (file->inode->control)
		return -EBADF;
	ret = ufs_budget_charge(&fs->budget, file->uid, 1);
	if (ret)
		return ret;
	fd = ufs_file_fd(fs, file, false);
	if (fd < 0) {
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
		return fd;
	}
	/* Two workers may race here: the first one's descriptor stays. */
	if (!__atomic_compare_exchange_n(&file->fd, &none, fd, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		close(fd);
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
		return 0;
	}
	file->charged = true;
	return 0;
}

/*
 * openat() of a backing file or directory, with O_NOATIME where the mount
 * asks for it (noatime, nodiratime).  Only the owner or CAP_FOWNER may use
 * O_NOATIME: a daemon without it then reads like any other process.
 */
int ufs_open_noatime(struct ufs_fs *fs, int dirfd, const char *name, int flags, mode_t mode)
{
	bool dir = flags & O_DIRECTORY;
	int fd = -1;

	if (fs->noatime || (dir && fs->nodiratime)) {
		fd = openat(dirfd, name, flags | O_NOATIME, mode);
		if (fd >= 0 || errno != EPERM)
			return fd < 0 ? -errno : fd;
	}
	fd = openat(dirfd, name, flags, mode);
	return fd < 0 ? -errno : fd;
}

/* The kernel decodes rdev with new_decode_dev(): 12-bit major, 20-bit minor. */
static uint32_t rdev_encode(dev_t dev)
{
	unsigned int maj = major(dev), min = minor(dev);

	return (min & 0xff) | (maj << 8) | ((min & ~0xffu) << 12);
}

void ufs_fill_attr(struct fuse_attr *attr, const struct stat *st)
{
	memset(attr, 0, sizeof(*attr));
	attr->ino = st->st_ino;
	attr->size = st->st_size;
	attr->blocks = st->st_blocks;
	attr->atime = st->st_atim.tv_sec;
	attr->mtime = st->st_mtim.tv_sec;
	attr->ctime = st->st_ctim.tv_sec;
	attr->atimensec = st->st_atim.tv_nsec;
	attr->mtimensec = st->st_mtim.tv_nsec;
	attr->ctimensec = st->st_ctim.tv_nsec;
	attr->mode = st->st_mode;
	attr->nlink = st->st_nlink;
	attr->uid = st->st_uid;
	attr->gid = st->st_gid;
	attr->rdev = rdev_encode(st->st_rdev);
	attr->blksize = st->st_blksize;
}

/*
 * A shared writable mapping of a passed-through open writes the backing
 * file directly: its page faults update the backing file's mtime and ctime,
 * and nothing tells the kernel's FUSE inode (no WRITE, and with
 * FOPEN_NOFLUSH no FLUSH either).  So while the inode has writable
 * passthrough opens its attributes are not cached at all (attr_valid 0:
 * the kernel asks again at every stat); the first such open also drops
 * what was cached before it (passthrough.c).
 */
double ufs_attr_timeout(struct ufs_fs *fs, const struct ufs_inode *inode)
{
	if (inode && __atomic_load_n(&inode->pt_writers, __ATOMIC_RELAXED))
		return 0;
	/* A kernel without FUSE_NOTIFY_PRUNE, over inode_limit (inode_prune.c). */
	if (ufs_inode_prune_short(&fs->prune))
		return 0;
	return ufs_coherence_timeouts(&fs->coherence, inode ? inode->dev : (dev_t)-1)->attr;
}

/*
 * Names, attributes and failed lookups: cached for long where the coherence
 * watcher sees SOURCE's changes (objects on SOURCE's own file system), else
 * for the short timeouts (coherence.c).  A kernel without FUSE_NOTIFY_PRUNE,
 * while the store is over inode_limit: no entry timeout, so the kernel
 * deletes each dentry as soon as nothing uses it (fuse_dentry_delete) and
 * FORGETs its inode (inode_prune.c).
 */
double ufs_entry_timeout(struct ufs_fs *fs, const struct ufs_inode *inode)
{
	if (ufs_inode_prune_short(&fs->prune))
		return 0;
	return ufs_coherence_timeouts(&fs->coherence, inode->dev)->entry;
}

double ufs_negative_timeout(struct ufs_fs *fs, const struct ufs_inode *parent)
{
	return ufs_coherence_timeouts(&fs->coherence, parent->dev)->negative;
}

void ufs_fill_entry(struct ufs_fs *fs, struct fuse_entry_out *e, const struct ufs_inode *inode,
		    const struct stat *st)
{
	double attr_timeout = ufs_attr_timeout(fs, inode);
	double entry_timeout = ufs_entry_timeout(fs, inode);

	memset(e, 0, sizeof(*e));
	e->nodeid = inode->nodeid;
	e->generation = 0;
	e->entry_valid = ufs_timeout_sec(entry_timeout);
	e->entry_valid_nsec = ufs_timeout_nsec(entry_timeout);
	e->attr_valid = ufs_timeout_sec(attr_timeout);
	e->attr_valid_nsec = ufs_timeout_nsec(attr_timeout);
	ufs_fill_attr(&e->attr, st);
}

void ufs_fill_attr_out(struct ufs_fs *fs, struct fuse_attr_out *out, const struct ufs_inode *inode,
		       const struct stat *st)
{
	double attr_timeout = ufs_attr_timeout(fs, inode);

	memset(out, 0, sizeof(*out));
	out->attr_valid = ufs_timeout_sec(attr_timeout);
	out->attr_valid_nsec = ufs_timeout_nsec(attr_timeout);
	ufs_fill_attr(&out->attr, st);
}

static int stat_fd(int fd, struct stat *st)
{
	return fstatat(fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) ? -errno : 0;
}

/*
 * LOOKUP's work, shared with the creating calls and READDIRPLUS: find the
 * child, account one kernel reference on it and fill the entry.
 */
int ufs_do_lookup(struct ufs_fs *fs, struct ufs_inode *parent, const char *name,
		  struct fuse_entry_out *e)
{
	struct ufs_inode *inode;
	struct stat st;
	int fd, ret;

	if (ufs_is_control_name(fs, parent, name)) {
		inode = ufs_control_inode(fs);
		ufs_control_stat(fs, &st);
		ufs_fill_entry(fs, e, inode, &st);
		return 0;
	}
	if (!strcmp(name, "..") && parent == fs->inodes.root)
		name = ".";
	fd = openat(parent->fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ufs_debug_pause("lookup");
	/*
	 * Whether it is inside SOURCE is decided after the open, from what was
	 * found: a parent moved out of SOURCE between a check and the open
	 * would otherwise hand out a child outside.  A directory is checked
	 * itself (".." included); anything else by its parent, which is where
	 * it was found (a file's path may not be walked up).
	 */
	ret = stat_fd(fd, &st);
	if (!ret)
		ret = S_ISDIR(st.st_mode) ? ufs_check_beneath_fd(&fs->confine, fd) :
					    ufs_inode_check_beneath(&fs->inodes, parent);
	if (ret) {
		close(fd);
		return ret;
	}
	/* Where a handle finds it again (export.c); "." and ".." name no new place. */
	ret = ufs_inode_find_or_insert(&fs->inodes, fd, &st,
				       strcmp(name, ".") && strcmp(name, "..") ? parent->nodeid : 0,
				       &inode);
	if (ret)
		return ret;
	ufs_fill_entry(fs, e, inode, &st);
	return 0;
}

/*
 * A write, truncate or chown that must clear set-id bits: clear them as the
 * backing file system would for a local caller, by the VFS's rule
 * (setattr_should_drop_suidgid): setuid always, setgid when the file is
 * group-executable or the caller is neither in its group nor holds
 * CAP_FSETID.  may_fsetid: the caller may hold it (a chown, which clears
 * them whoever does it); else the kernel or the caller's capabilities said
 * it does not.  st->st_gid is the group the rule looks at (a chown's old
 * one).  The kernel keeps the mode it cached, so it is told it is stale.
 */
int ufs_kill_suidgid(struct ufs_fs *fs, const struct ufs_req *req, struct ufs_inode *inode,
		     const struct stat *st, bool may_fsetid)
{
	mode_t mode = st->st_mode, kill = 0;
	char name[32];

	if (!S_ISREG(mode))
		return 0;
	if (mode & S_ISUID)
		kill |= S_ISUID;
	if ((mode & S_ISGID) &&
	    ((mode & S_IXGRP) || (!ufs_caller_in_group(req, st->st_gid) &&
				  !(may_fsetid && ufs_caller_capable(req, CAP_FSETID)))))
		kill |= S_ISGID;
	if (!kill)
		return 0;
	if (ufs_proc_name(inode, name, sizeof(name)))
		return -EBADF;
	if (fchmodat(fs->confine.proc_fd, name, mode & 07777 & ~kill, 0))
		return -errno;
	ufs_attr_stale(fs, inode);
	return 0;
}

void ufs_attr_stale(struct ufs_fs *fs, const struct ufs_inode *inode)
{
	if (fs->attr_stale)
		fs->attr_stale(fs->upcall_arg, inode->nodeid);
}

/*
 * With FUSE_DONT_MASK the kernel leaves the caller's umask to us, so that a
 * default ACL on the parent can take its place as it would locally.  Each
 * worker has its own umask (unshare(CLONE_FS)); the process umask is 0.
 */
void ufs_umask_enter(struct ufs_fs *fs, uint32_t umask_in)
{
	if (ufs_conn_has(fs->conn, FUSE_DONT_MASK))
		umask(umask_in & 0777);
}

void ufs_umask_leave(struct ufs_fs *fs)
{
	if (ufs_conn_has(fs->conn, FUSE_DONT_MASK))
		umask(0);
}

/*
 * A creating request served again after a hand-over (req->replay) may find
 * what its first serving made before the old daemon went: its EEXIST then
 * means done.  Only for a name of the type asked for (link_of: that very
 * inode), owned by whom this daemon creates it for; anything else was
 * there before, or is someone else's, and stays EEXIST.
 */
bool ufs_replay_made(struct ufs_fs *fs, const struct ufs_req *req, int dir_fd, const char *name,
		     mode_t type, const struct stat *link_of)
{
	uid_t owner = fs->running_as_root ? req->in->uid : geteuid();
	struct stat st;

	if (!req->replay || fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
		return false;
	if (link_of)
		return st.st_dev == link_of->st_dev && st.st_ino == link_of->st_ino;
	return st.st_uid == owner && (st.st_mode & S_IFMT) == (type ? type : S_IFREG);
}
