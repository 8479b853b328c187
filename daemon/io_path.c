// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The data path of each open: kernel passthrough (passthrough.c), or the
 * daemon's (copy or zero copy), chosen per inode at its first open and kept
 * until its last is released; FOPEN_NOFLUSH and FOPEN_DIRECT_IO where the
 * backing file calls for them.  passthrough.c has the safety rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"
#include "ident.h"
#include "io_path.h"
#include "lockdep.h"
#include "log.h"
#include "passthrough.h"
#include "init_negotiate.h"
#include "worker.h"

_Static_assert(UFS_PT_REFUSED_COUNT ==
		       sizeof(((struct ufs_stats *)0)->pt_refused) / sizeof(uint64_t),
	       "one counter per refusal");

static enum ufs_passthrough_state state_get(struct ufs_fs *fs)
{
	return __atomic_load_n(&fs->pt.state, __ATOMIC_RELAXED);
}

enum ufs_passthrough_state ufs_io_path_start(struct ufs_fs *fs, int dev_fd, const char **why)
{
	fs->pt.dev_fd = dev_fd;
	fs->pt.state = UFS_PT_OFF;
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
	return ufs_passthrough_probe(&fs->pt, fs->confine.root_fd, why);
}

/* The inode's backing file system, learnt at its first open. */
static enum ufs_backing_fs backing_fs(struct ufs_inode *inode, int fd)
{
	enum ufs_backing_fs kind = __atomic_load_n(&inode->backing_fs, __ATOMIC_RELAXED);

	if (kind != UFS_BACKING_UNKNOWN)
		return kind;
	kind = ufs_backing_fs_of(fd);
	if (kind == UFS_BACKING_UNKNOWN)
		return UFS_BACKING_PSEUDO; /* unknown: the cautious answer, not kept */
	/* Racing first opens find the same answer. */
	__atomic_store_n(&inode->backing_fs, kind, __ATOMIC_RELAXED);
	return kind;
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
	*why = ufs_backing_refusal(file->fd);
	if (*why != UFS_PT_REFUSED_COUNT)
		return -1;
	id = ufs_backing_open(&fs->pt, file->fd, &file->opener);
	if (id >= 0)
		return id;
	if (id == -EPERM) {
		ufs_passthrough_lost_capability(&fs->pt);
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
	    ufs_backing_refusal(file->fd) == UFS_PT_REFUSED_ATTR) {
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
/*
 * The coherence watcher's ignore mark on a file with writable passthrough
 * opens (coherence.h), made and removed through the inode's own descriptor
 * (pinned by the open): a passed-through open keeps none of its own.
 */
static void quiet_writes(struct ufs_fs *fs, struct ufs_inode *inode, bool quiet)
{
	char name[16];	/* in /proc/self/fd, as fs_shared.c's ufs_proc_name */

	snprintf(name, sizeof(name), "%d", inode->fd);
	ufs_coherence_quiet(&fs->coherence, fs->confine.proc_fd, name, quiet);
}

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
		/* Its writes tell the kernel nothing now: no event for each (coherence.c). */
		if (first_writer)
			quiet_writes(fs, inode, true);
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
		/* Before its attributes may be cached again: writes are reported again. */
		if (inode->pt_writers == 1)
			quiet_writes(fs, inode, false);
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
		ufs_backing_close(&fs->pt, close_id);
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
			ufs_backing_adopted(&fs->pt);
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
