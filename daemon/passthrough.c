// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Kernel passthrough per open (FUSE_PASSTHROUGH, Linux 6.9): which data path
 * an open gets, the backing ids behind it, and the reasons an open that
 * could have been passed through was not.
 *
 * Safety rules, each keeping the mount as strict as the backing file system:
 *  - the backing id is registered with CAP_FSETID dropped: the kernel does
 *    passthrough writes with the credentials of the BACKING_OPEN caller
 *    (fs/fuse/backing.c: fb->cred = prepare_creds()), and the backing file
 *    system clears set-id bits on a write only for a writer without it;
 *  - and as the inode's first opener's identity for limits (ident.c): a
 *    later writer with other limits gets FOPEN_DIRECT_IO with it;
 *  - set-id files stay on the daemon path, where the kernel tells the daemon
 *    per write whether its caller may keep the bits (FUSE_WRITE_KILL_SUIDGID);
 *    a set-uid bit, or a set-gid bit with group execute, set while the file
 *    is passed through is cleared by any write, root's included (stricter
 *    than natively, never looser); a set-gid bit without group execute
 *    (which exec ignores) stays when the daemon is in the file's group;
 *  - never on a suid mount (ufs_passthrough_start);
 *  - append-only and immutable files stay on the daemon path: a passthrough
 *    mmap reaches the backing file without the VFS's IS_APPEND check
 *    (mm/mmap.c checks the FUSE inode, which has no such flag); their
 *    writers get FOPEN_DIRECT_IO there (append_only_writer);
 *  - files of pseudo file systems (proc, sysfs, ...) are never passed
 *    through: their files need not behave like regular files.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fs.h"
#include "ident.h"
#include "lockdep.h"
#include "log.h"
#include "passthrough.h"
#include "init_negotiate.h"
#include "worker.h"

_Static_assert(UFS_PT_REFUSED_COUNT ==
		       sizeof(((struct ufs_stats *)0)->pt_refused) / sizeof(uint64_t),
	       "one counter per refusal");

static const char *const state_names[] = {
	[UFS_PT_OFF] = "off",
	[UFS_PT_ON] = "on",
	[UFS_PT_EPERM] = "eperm",
};

static const char *const refusal_names[] = {
	[UFS_PT_REFUSED_EPERM] = "eperm",
	[UFS_PT_REFUSED_ELOOP] = "eloop",
	[UFS_PT_REFUSED_MIXED] = "mixed",
	[UFS_PT_REFUSED_ATTR] = "attr",
	[UFS_PT_REFUSED_SETID] = "setid",
	[UFS_PT_REFUSED_PSEUDO] = "pseudo",
	[UFS_PT_REFUSED_OTHER] = "other",
};

const char *ufs_passthrough_state_name(enum ufs_passthrough_state state)
{
	return state_names[state];
}

const char *ufs_pt_refusal_name(enum ufs_pt_refusal why)
{
	return refusal_names[why];
}

static enum ufs_passthrough_state state_get(struct ufs_fs *fs)
{
	return __atomic_load_n(&fs->passthrough, __ATOMIC_RELAXED);
}

/* The only transition after start: ON -> EPERM, when the capability went. */
static void state_lost_capability(struct ufs_fs *fs)
{
	enum ufs_passthrough_state on = UFS_PT_ON;

	if (__atomic_compare_exchange_n(&fs->passthrough, &on, UFS_PT_EPERM, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		ufs_warn("passthrough: BACKING_OPEN refused (EPERM): files are served by the "
			 "daemon");
}

enum ufs_passthrough_state ufs_passthrough_start(struct ufs_fs *fs, int dev_fd, const char **why)
{
	/* A directory passes the capability check and fails after it (EISDIR). */
	struct fuse_backing_map map = { .fd = fs->confine.root_fd };
	int ret;

	fs->dev_fd = dev_fd;
	fs->passthrough = UFS_PT_OFF;
	*why = fs->conn->passthrough_off_reason;
	if (!fs->conn->passthrough)
		return UFS_PT_OFF;
	/* The daemon opens backing files O_NOATIME for the mount; the kernel would not. */
	if (fs->noatime) {
		*why = "the mount's noatime (passthrough reads would set the backing files' atime)";
		return UFS_PT_OFF;
	}
	/*
	 * A passthrough write clears the backing file's set-id bits, but with
	 * FUSE_HANDLE_KILLPRIV_V2 the kernel leaves the mount's cached mode to
	 * the server, which never sees the write: until the attributes time
	 * out, exec through a suid mount would honour bits the file no longer
	 * has.  Without killpriv_v2 every write would cost a GETXATTR.
	 */
	if (fs->suid) {
		*why = "the mount's suid (exec could honour set-id bits a passthrough write "
		       "cleared)";
		return UFS_PT_OFF;
	}
	ret = ioctl(dev_fd, FUSE_DEV_IOC_BACKING_OPEN, &map);
	if (ret >= 0) {
		/* Cannot happen for a directory; do not leak the id if it did. */
		ioctl(dev_fd, FUSE_DEV_IOC_BACKING_CLOSE, &ret);
	} else if (errno == EPERM) {
		*why = "BACKING_OPEN needs CAP_SYS_ADMIN, which the daemon lacks";
		fs->passthrough = UFS_PT_EPERM;
		return UFS_PT_EPERM;
	}
	*why = NULL;
	fs->passthrough = UFS_PT_ON;
	return UFS_PT_ON;
}

/*
 * BACKING_OPEN of fd as who: the new id, or -errno.  The kernel keeps the
 * caller's credentials for every passthrough write (fb->cred), so they are
 * the first opener's limits (ident.c), with CAP_FSETID dropped.
 */
static int backing_open(struct ufs_fs *fs, int fd, const struct ufs_ident *who)
{
	struct fuse_backing_map map = { .fd = fd };
	struct ufs_ident_saved saved;
	int id, err;

	err = ufs_ident_enter(who, 1ULL << CAP_FSETID, &saved);
	if (err)
		return err;
	id = ioctl(fs->dev_fd, FUSE_DEV_IOC_BACKING_OPEN, &map);
	err = errno;
	ufs_ident_leave(&saved);
	if (id < 0)
		return -err;
	__atomic_fetch_add(&fs->backing_ids, 1, __ATOMIC_RELAXED);
	return id;
}

static void backing_close(struct ufs_fs *fs, int id)
{
	uint32_t arg = id;

	if (fs->dev_fd < 0)
		return;
	if (ioctl(fs->dev_fd, FUSE_DEV_IOC_BACKING_CLOSE, &arg))
		ufs_log_once(UFS_LOG_WARN, "passthrough: BACKING_CLOSE of id %d: %m", id);
	__atomic_fetch_sub(&fs->backing_ids, 1, __ATOMIC_RELAXED);
}

/* Backing files whose reads and writes are not those of a regular file. */
static bool pseudo_fs(unsigned long type)
{
	static const unsigned long magic[] = {
		PROC_SUPER_MAGIC,
		SYSFS_MAGIC,
		DEBUGFS_MAGIC,
		TRACEFS_MAGIC,
		SECURITYFS_MAGIC,
		CGROUP_SUPER_MAGIC,
		CGROUP2_SUPER_MAGIC,
		BPF_FS_MAGIC,
		EFIVARFS_MAGIC,
		PSTOREFS_MAGIC,
		DEVPTS_SUPER_MAGIC,
		SELINUX_MAGIC,
		SMACK_MAGIC,
		0x19800202 /* mqueue */,
		0x62656570 /* configfs */,
		0x65735543 /* fusectl */,
	};

	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (type == magic[i])
			return true;
	return false;
}

/*
 * Local file systems, where nothing happens at close(2) that the last
 * release does not do as well: their opens need no FLUSH.  On NFS a close
 * writes back and reports errors (close-to-open), so FLUSH stays.
 */
static bool local_fs(unsigned long type)
{
	static const unsigned long magic[] = {
		EXT4_SUPER_MAGIC, XFS_SUPER_MAGIC,  BTRFS_SUPER_MAGIC,
		TMPFS_MAGIC,	  F2FS_SUPER_MAGIC, RAMFS_MAGIC,
	};

	for (size_t i = 0; i < sizeof(magic) / sizeof(magic[0]); i++)
		if (type == magic[i])
			return true;
	return false;
}

/* The inode's backing file system, learnt at its first open. */
static enum ufs_backing_fs backing_fs(struct ufs_inode *inode, int fd)
{
	enum ufs_backing_fs kind = __atomic_load_n(&inode->backing_fs, __ATOMIC_RELAXED);
	struct statfs sfs;

	if (kind != UFS_BACKING_UNKNOWN)
		return kind;
	if (fstatfs(fd, &sfs))
		return UFS_BACKING_PSEUDO; /* unknown: the cautious answer, not kept */
	kind = pseudo_fs(sfs.f_type)  ? UFS_BACKING_PSEUDO
	       : local_fs(sfs.f_type) ? UFS_BACKING_LOCAL
				      : UFS_BACKING_OTHER;
	/* Racing first opens find the same answer. */
	__atomic_store_n(&inode->backing_fs, kind, __ATOMIC_RELAXED);
	return kind;
}

/* What keeps fd off passthrough, or UFS_PT_REFUSED_COUNT for nothing. */
static enum ufs_pt_refusal backing_attrs(int fd)
{
	struct statx stx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MODE, &stx))
		return UFS_PT_REFUSED_OTHER; /* unknown: the cautious answer */
	if (stx.stx_attributes & (STATX_ATTR_APPEND | STATX_ATTR_IMMUTABLE))
		return UFS_PT_REFUSED_ATTR;
	if (stx.stx_mode & (S_ISUID | S_ISGID))
		return UFS_PT_REFUSED_SETID;
	return UFS_PT_REFUSED_COUNT;
}

/*
 * Whether the inode's first open may be passed through, and why not.
 * Returns the backing id, or -1 with *why set.
 */
static int first_open(struct ufs_fs *fs, struct ufs_file *file, enum ufs_pt_refusal *why)
{
	int id;

	if (backing_fs(file->inode, file->fd) == UFS_BACKING_PSEUDO) {
		*why = UFS_PT_REFUSED_PSEUDO;
		return -1;
	}
	*why = backing_attrs(file->fd);
	if (*why != UFS_PT_REFUSED_COUNT)
		return -1;
	id = backing_open(fs, file->fd, &file->opener);
	if (id >= 0)
		return id;
	if (id == -EPERM) {
		state_lost_capability(fs);
		*why = UFS_PT_REFUSED_EPERM;
	} else {
		*why = id == -ELOOP ? UFS_PT_REFUSED_ELOOP : UFS_PT_REFUSED_OTHER;
		ufs_log_once(UFS_LOG_INFO,
			     "passthrough: BACKING_OPEN refused (%s): such files are "
			     "served by the daemon",
			     strerror(-id));
	}
	return -1;
}

/*
 * The inode is passed through already, so this open must be too.  A writer
 * with O_APPEND of a file made append-only since would get a mapping that
 * overwrites it: refused, as no path is both allowed and safe.
 */
static int join_passthrough(struct ufs_file *file)
{
	if ((file->flags & O_ACCMODE) != O_RDONLY &&
	    backing_attrs(file->fd) == UFS_PT_REFUSED_ATTR) {
		ufs_log_once(UFS_LOG_WARN, "passthrough: a writer of a file made append-only while "
					   "open through the mount is refused (ETXTBSY)");
		return -ETXTBSY;
	}
	return 0;
}

/*
 * A writer of an append-only file, on the daemon path (never passed
 * through: first_open and join_passthrough).  Natively mmap(2) refuses it
 * any shared mapping (EACCES, mm/mmap.c: IS_APPEND), but the FUSE inode has
 * no S_APPEND, and pages of a shared mapping are written back at their own
 * offsets.  FOPEN_DIRECT_IO makes the kernel refuse the shared mapping
 * itself (ENODEV: FUSE_DIRECT_IO_ALLOW_MMAP is not negotiated) and send
 * every write to the daemon, whose backing descriptor has O_APPEND (the
 * backing open needs it), so each lands at the end whatever the offset.
 */
static bool append_only_writer(const struct ufs_file *file)
{
	struct statx stx;

	if ((file->flags & O_ACCMODE) == O_RDONLY)
		return false;
	/* Unknown: the cautious answer. */
	return statx(file->fd, "", AT_EMPTY_PATH, 0, &stx) ||
	       (stx.stx_attributes & STATX_ATTR_APPEND);
}

static bool pt_writer(const struct ufs_file *file, enum ufs_io_mode mode)
{
	return mode == UFS_IO_PASSTHROUGH && (file->flags & O_ACCMODE) != O_RDONLY;
}

/*
 * One more writable passthrough open of inode (under inode->lock): from
 * now on its attributes are replied uncacheable (ufs_attr_timeout).
 * Returns whether it is the first, whose caller drops what the kernel
 * cached before, once the lock is released (the attr_stale upcall).
 */
static bool pt_writer_add(struct ufs_inode *inode)
{
	UFS_ASSERT_HELD(&inode->lock);
	uint32_t n = __atomic_load_n(&inode->pt_writers, __ATOMIC_RELAXED);

	__atomic_store_n(&inode->pt_writers, n + 1, __ATOMIC_RELAXED);
	return !n;
}

static void count_open(struct ufs_req *req, uint32_t open_flags)
{
	struct ufs_stats *st = req->worker ? &req->worker->stats : NULL;

	if (!st)
		return;
	if (open_flags & FOPEN_PASSTHROUGH)
		ufs_stat_add(&st->opens_passthrough, 1);
	else if (open_flags & FOPEN_IO_URING_ZERO_COPY)
		ufs_stat_add(&st->opens_zero_copy, 1);
	else
		ufs_stat_add(&st->opens_copy, 1);
}

static void count_refusal(struct ufs_req *req, enum ufs_pt_refusal why)
{
	if (req->worker && why != UFS_PT_REFUSED_COUNT)
		ufs_stat_add(&req->worker->stats.pt_refused[why], 1);
}

int ufs_io_path_open(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
		     uint32_t *open_flags, int32_t *backing_id)
{
	struct ufs_inode *inode = file->inode;
	enum ufs_pt_refusal why = UFS_PT_REFUSED_COUNT;
	enum ufs_io_mode mode = UFS_IO_DAEMON;
	bool first_writer = false, direct = false;
	int ret = 0, id;

	*backing_id = 0;
	/*
	 * FLUSH at close(2) does nothing a local backing file needs, unless
	 * the daemon keeps POSIX locks, which FLUSH releases by owner.  Not
	 * with the writeback cache: there the kernel flushes regardless.
	 */
	if (!fs->cfg->posix_locks && backing_fs(inode, file->fd) == UFS_BACKING_LOCAL)
		*open_flags |= FOPEN_NOFLUSH;
	/*
	 * Not negotiated, or zero copy serves every open (io_path=auto on
	 * Linux 7.3): no inode is ever passed through, nothing to keep.
	 */
	if (state_get(fs) == UFS_PT_OFF || fs->zero_copy)
		goto out;
	pthread_mutex_lock(&inode->lock);
	switch (inode->io_mode) {
	case UFS_IO_NONE:
		if (state_get(fs) == UFS_PT_EPERM) {
			why = UFS_PT_REFUSED_EPERM;
		} else {
			id = first_open(fs, file, &why);
			if (id >= 0) {
				inode->backing_id = id;
				inode->backing_who = file->opener;
				inode->backing_who_known = true;
				mode = UFS_IO_PASSTHROUGH;
			}
		}
		inode->io_mode = mode;
		break;
	case UFS_IO_PASSTHROUGH:
		ret = join_passthrough(file);
		mode = UFS_IO_PASSTHROUGH;
		/*
		 * The backing file writes with its first opener's limits: a
		 * writer with other limits (root's included) writes through
		 * the daemon, which charges it (FOPEN_DIRECT_IO overrides
		 * FOPEN_PASSTHROUGH for read and write, fs/fuse/file.c; a
		 * mapping still goes to the backing file).
		 */
		direct = (file->flags & O_ACCMODE) != O_RDONLY &&
			 (!inode->backing_who_known ||
			  !ufs_ident_equal(&inode->backing_who, &file->opener));
		break;
	case UFS_IO_DAEMON:
		why = UFS_PT_REFUSED_MIXED;
		break;
	}
	if (!ret) {
		inode->io_opens++;
		file->io_mode = mode;
		*backing_id = mode == UFS_IO_PASSTHROUGH ? inode->backing_id : 0;
		if (pt_writer(file, mode))
			first_writer = pt_writer_add(inode);
	}
	pthread_mutex_unlock(&inode->lock);
	if (ret)
		return ret;
	/*
	 * The attributes the kernel cached before this open (the LOOKUP's or
	 * the open's own GETATTR, for attr_timeout) would hide what a mapping
	 * does to the backing file: dropped.  FUSE_NOTIFY_INVAL_INODE with a
	 * negative offset takes no inode lock (daemon_start.c: attr_stale), so it is
	 * safe while the kernel waits for this OPEN's reply.  The upcall
	 * itself: ufs_attr_stale is a layer above.
	 */
	if (first_writer && fs->attr_stale)
		fs->attr_stale(fs->upcall_arg, inode->nodeid);
	count_refusal(req, why);
	/* Only these may go with it (iomode.c: FOPEN_PASSTHROUGH_MASK). */
	if (mode == UFS_IO_PASSTHROUGH)
		*open_flags = FOPEN_PASSTHROUGH | (direct ? FOPEN_DIRECT_IO : 0) |
			      (*open_flags & (FOPEN_PARALLEL_DIRECT_WRITES | FOPEN_NOFLUSH));
out:
	if (!(*open_flags & FOPEN_PASSTHROUGH) && append_only_writer(file))
		*open_flags = (*open_flags & ~(FOPEN_KEEP_CACHE | FOPEN_IO_URING_ZERO_COPY)) |
			      FOPEN_DIRECT_IO;
	count_open(req, *open_flags);
	return 0;
}

void ufs_io_path_release(struct ufs_fs *fs, struct ufs_file *file)
{
	struct ufs_inode *inode = file->inode;
	int close_id = -1;

	if (file->io_mode == UFS_IO_NONE)
		return;
	pthread_mutex_lock(&inode->lock);
	UFS_BUG_ON(!inode->io_opens || inode->io_mode != file->io_mode);
	if (pt_writer(file, file->io_mode)) {
		UFS_BUG_ON(!inode->pt_writers);
		__atomic_store_n(&inode->pt_writers, inode->pt_writers - 1, __ATOMIC_RELAXED);
	}
	if (!--inode->io_opens) {
		if (inode->io_mode == UFS_IO_PASSTHROUGH)
			close_id = inode->backing_id;
		inode->io_mode = UFS_IO_NONE;
		inode->backing_id = 0;
	}
	pthread_mutex_unlock(&inode->lock);
	file->io_mode = UFS_IO_NONE;
	if (close_id >= 0)
		backing_close(fs, close_id);
}

/*
 * A predecessor's open file, restored with the data path the kernel holds
 * it on: its opens are counted again, and a passed-through inode keeps the
 * backing id the kernel still has (closed by the last RELEASE, here).
 * Returns -EPROTO if the record contradicts an earlier open of the inode.
 */
int ufs_io_path_restore(struct ufs_fs *fs, struct ufs_file *file, enum ufs_io_mode mode,
			int backing_id)
{
	struct ufs_inode *inode = file->inode;
	int ret = 0;

	if (mode == UFS_IO_NONE)
		return 0;
	if (mode != UFS_IO_DAEMON && (mode != UFS_IO_PASSTHROUGH || backing_id <= 0))
		return -EPROTO;
	pthread_mutex_lock(&inode->lock);
	if (inode->io_mode == UFS_IO_NONE) {
		inode->io_mode = mode;
		/* Whose credentials the kernel's backing file has is not recorded. */
		inode->backing_who_known = false;
		inode->backing_id = mode == UFS_IO_PASSTHROUGH ? backing_id : 0;
		if (mode == UFS_IO_PASSTHROUGH)
			__atomic_fetch_add(&fs->backing_ids, 1, __ATOMIC_RELAXED);
	} else if (inode->io_mode != mode || inode->backing_id != (mode == UFS_IO_PASSTHROUGH ?
								   backing_id : 0)) {
		ret = -EPROTO;
	}
	if (!ret) {
		inode->io_opens++;
		file->io_mode = mode;
		if (pt_writer(file, mode))
			pt_writer_add(inode);
	}
	pthread_mutex_unlock(&inode->lock);
	return ret;
}
