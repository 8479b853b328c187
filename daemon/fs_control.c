// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The stats control file: a read-only regular file at the root (".uringfs"
 * unless stats_file says otherwise), reachable by name, never listed, and
 * without a backing descriptor.  Each open takes a snapshot of the counters
 * and reads serve bytes from it; FOPEN_DIRECT_IO makes the kernel ask us
 * for every read instead of trusting a size.
 *
 * Anyone may read it (0444, and allow_other lets every user in): the
 * counters are the whole mount's, but the requests in flight are each a
 * caller's (pid, uid, node), so an opener sees only its own uid's unless it
 * is root or the daemon's own user.  The snapshots held by ordinary users
 * are bounded (control_opens.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_file.h"

#define CONTROL_INO 0xffffffffffffff00ULL	/* outside any real file system's range */

int ufs_control_init(struct ufs_fs *fs)
{
	struct ufs_inode *inode;
	struct stat st = { .st_dev = (dev_t)-1, .st_ino = (ino_t)CONTROL_INO,
			   .st_mode = S_IFREG };

	if (ufs_control_opens_init(&fs->control_opens, geteuid()))
		return -ENOMEM;
	if (!fs->cfg->stats_file[0])
		return 0;
	clock_gettime(CLOCK_REALTIME, &fs->control_time);
	if (ufs_inode_find_or_insert(&fs->inodes, -1, &st, FUSE_ROOT_ID, &inode))
		return -ENOMEM;
	inode->control = 1;
	inode->nlookup = 0;	/* only the kernel's lookups count */
	fs->control = inode;
	return 0;
}

bool ufs_is_control_name(struct ufs_fs *fs, const struct ufs_inode *parent, const char *name)
{
	return fs->control && parent == fs->inodes.root && !strcmp(name, fs->cfg->stats_file);
}

/* The control inode with one more kernel reference, for a LOOKUP reply. */
struct ufs_inode *ufs_control_inode(struct ufs_fs *fs)
{
	pthread_mutex_lock(&fs->inodes.inode_lock);
	fs->control->nlookup++;
	pthread_mutex_unlock(&fs->inodes.inode_lock);
	return fs->control;
}

void ufs_control_stat(struct ufs_fs *fs, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = CONTROL_INO;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_uid = fs->control_opens.owner;
	st->st_gid = getegid();
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = fs->control_time;
}

int ufs_control_file_fill(struct ufs_fs *fs, struct ufs_file *file)
{
	bool all = ufs_control_opens_privileged(&fs->control_opens, file->uid);

	if (!all) {
		int ret = ufs_control_opens_take(&fs->control_opens, file->uid);

		if (ret)
			return ret;
		file->control_counted = true;
	}
	if (fs->control_snapshot)
		file->control_text =
			fs->control_snapshot(fs->upcall_arg, all, file->uid, &file->control_len);
	return 0;
}

ssize_t ufs_control_open(struct ufs_fs *fs, struct ufs_req *req, uint32_t flags)
{
	struct ufs_open_out *out = req->out;
	struct ufs_file *file;
	uint64_t fh;
	int ret;

	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return -EACCES;
	file = ufs_file_new(req->inode, -1, O_RDONLY);
	if (!file)
		return -ENOMEM;
	/*
	 * With idmap the kernel sends no ids in an OPEN: the opening thread's
	 * own (dispatch.c), so root still reads every request in flight.
	 */
	file->uid = req->caller_uid;
	ufs_inode_ref(&fs->inodes, req->inode);
	ret = ufs_control_file_fill(fs, file);
	if (!ret)
		ret = ufs_file_register(&fs->files, file, &fh);
	if (ret) {
		ufs_file_free(fs, file);
		return ret;
	}
	memset(out, 0, sizeof(*out));
	out->fh = fh;
	out->open_flags = FOPEN_DIRECT_IO;
	/* Zero-copied reads of it bounce through the worker's memory file. */
	if (fs->zero_copy)
		out->open_flags |= FOPEN_IO_URING_ZERO_COPY;
	return sizeof(*out);
}

ssize_t ufs_control_read(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
			 uint64_t off, uint32_t size)
{
	size_t n;

	(void)fs;
	if (off >= file->control_len)
		return 0;
	n = file->control_len - off;
	if (n > size)
		n = size;
	if (n > req->out_cap)
		n = req->out_cap;
	memcpy(req->out, file->control_text + off, n);
	return n;
}
