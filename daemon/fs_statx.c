// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * STATX: the backing file's statx(2), or the control file's made-up one,
 * in the kernel's fuse_statx (synchronous on every transport, like the
 * other metadata calls in fs_entry.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_shared.h"

static void fill_sx_time(struct fuse_sx_time *t, const struct statx_timestamp *s)
{
	t->tv_sec = s->tv_sec;
	t->tv_nsec = s->tv_nsec;
}

/*
 * The control file has no backing inode: its statx is its stat.  Never
 * ENOSYS: the kernel would stop sending STATX for the whole mount.
 */
static void control_statx(struct ufs_fs *fs, struct statx *stx)
{
	struct stat st;

	ufs_control_stat(fs, &st);
	memset(stx, 0, sizeof(*stx));
	stx->stx_mask = STATX_BASIC_STATS;
	stx->stx_blksize = st.st_blksize;
	stx->stx_nlink = st.st_nlink;
	stx->stx_uid = st.st_uid;
	stx->stx_gid = st.st_gid;
	stx->stx_mode = st.st_mode;
	stx->stx_ino = st.st_ino;
	stx->stx_size = st.st_size;
	stx->stx_blocks = st.st_blocks;
	stx->stx_atime.tv_sec = st.st_atim.tv_sec;
	stx->stx_atime.tv_nsec = st.st_atim.tv_nsec;
	stx->stx_ctime.tv_sec = st.st_ctim.tv_sec;
	stx->stx_ctime.tv_nsec = st.st_ctim.tv_nsec;
	stx->stx_mtime.tv_sec = st.st_mtim.tv_sec;
	stx->stx_mtime.tv_nsec = st.st_mtim.tv_nsec;
}

ssize_t ufs_op_statx(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_statx_in *in = req->args.op;
	struct fuse_statx_out *out = req->out;
	struct fuse_statx *sx = &out->stat;
	struct ufs_file *file = NULL;
	struct statx stx;
	int fd = req->inode->fd;
	int flags = AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | (in->sx_flags & AT_STATX_SYNC_TYPE);

	if (req->inode->control) {
		control_statx(fs, &stx);
	} else {
		int ret = ufs_inode_dir_beneath(&fs->inodes, req->inode);

		if (ret)
			return ret;
		if (in->getattr_flags & FUSE_GETATTR_FH)
			file = ufs_file_lookup(&fs->files, in->fh);
		if (file && file->fd >= 0)
			fd = file->fd;
		if (statx(fd, "", flags, in->sx_mask | STATX_BASIC_STATS, &stx))
			return -errno;
	}

	memset(out, 0, sizeof(*out));
	out->attr_valid = ufs_timeout_sec(ufs_attr_timeout(fs, req->inode));
	out->attr_valid_nsec = ufs_timeout_nsec(ufs_attr_timeout(fs, req->inode));
	sx->mask = stx.stx_mask;
	sx->blksize = stx.stx_blksize;
	sx->attributes = stx.stx_attributes;
	sx->nlink = stx.stx_nlink;
	sx->uid = stx.stx_uid;
	sx->gid = stx.stx_gid;
	sx->mode = stx.stx_mode;
	sx->ino = stx.stx_ino;
	sx->size = stx.stx_size;
	sx->blocks = stx.stx_blocks;
	sx->attributes_mask = stx.stx_attributes_mask;
	fill_sx_time(&sx->atime, &stx.stx_atime);
	fill_sx_time(&sx->btime, &stx.stx_btime);
	fill_sx_time(&sx->ctime, &stx.stx_ctime);
	fill_sx_time(&sx->mtime, &stx.stx_mtime);
	sx->rdev_major = stx.stx_rdev_major;
	sx->rdev_minor = stx.stx_rdev_minor;
	sx->dev_major = stx.stx_dev_major;
	sx->dev_minor = stx.stx_dev_minor;
	return sizeof(*out);
}
