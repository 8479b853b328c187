// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directories: OPENDIR, READDIR, READDIRPLUS, RELEASEDIR, FSYNCDIR.
 *
 * Entries come from getdents64 on our own descriptor.  The offset the kernel
 * hands back is the backing file system's d_off cookie, so a READDIR at any
 * offset the kernel has seen resumes exactly there (seekdir semantics).
 *
 * With cached listings (cache_readdir, init_negotiate.c) and no daemon-side
 * state a directory open needs (no_opendir() below), OPENDIR is answered
 * ENOSYS once: the kernel then sets fc->no_opendir (fuse_file_open,
 * fs/fuse/file.c) and sends neither OPENDIR nor RELEASEDIR again, caches
 * every listing (FOPEN_KEEP_CACHE | FOPEN_CACHE_DIR, its default without
 * an open), and asks READDIR, READDIRPLUS, FSYNCDIR and the attribute
 * ioctls with fh 0, which no open of ours ever has (file_table.c).  Those
 * open the directory again for the one request, as the daemon (like
 * OPENDIR did: the kernel has checked the caller, default_permissions),
 * and seek to the cookie; so a directory costs two round trips fewer per
 * opendir(), and one it lists from the kernel's cache costs none.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "fs_control.h"
#include "fs_file.h"
#include "fs_shared.h"
#include "init_negotiate.h"
#include "log.h"

#define DIR_BUF_SIZE 32768

struct linux_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/*
 * Whether the kernel keeps listings (cache_readdir, init_negotiate.c): only
 * with FUSE_AUTO_INVAL_DATA, and under auto only where names and attributes
 * are cached long too (the coherence watcher's timeouts, or long ones set),
 * else READDIRPLUS refreshing them is worth more than a kept listing.
 */
static bool listings_cached(struct ufs_fs *fs, const struct ufs_inode *dir)
{
	if (!fs->conn || !ufs_conn_has(fs->conn, FUSE_AUTO_INVAL_DATA))
		return false;
	if (fs->cfg->cache_readdir == UFS_RDC_ON)
		return true;
	return ufs_entry_timeout(fs, dir) >= UFS_CACHE_READDIR_MIN_TIMEOUT &&
	       ufs_attr_timeout(fs, dir) >= UFS_CACHE_READDIR_MIN_TIMEOUT;
}

/*
 * Whether OPENDIR is refused with ENOSYS (see the top).  Only where the
 * kernel caches listings honestly (FUSE_AUTO_INVAL_DATA, asked for with
 * cache_readdir), checks the caller's permission itself
 * (default_permissions: OPENDIR would have been the daemon's only chance),
 * and keeps locks on directories to itself (with posix_locks or
 * flock_locks a directory's lock lives on its open: fs_lock.c).
 */
static bool no_opendir(struct ufs_fs *fs, const struct ufs_inode *dir)
{
	return listings_cached(fs, dir) && fs->cfg->default_permissions && !fs->cfg->posix_locks &&
	       !fs->cfg->flock_locks;
}

ssize_t ufs_op_opendir(struct ufs_fs *fs, struct ufs_req *req)
{
	struct ufs_open_out *out = req->out;
	struct ufs_file *file;
	uint64_t fh;
	int fd, ret;

	if (req->inode->type != S_IFDIR)
		return -ENOTDIR;
	if (no_opendir(fs, req->inode))
		return -ENOSYS;
	ret = ufs_inode_dir_beneath(&fs->inodes, req->inode);
	if (ret)
		return ret;
	/* A directory stream holds a descriptor: the caller's (budget.h). */
	ret = ufs_budget_charge(&fs->budget, req->caller_uid, 1);
	if (ret)
		return ret;
	fd = ufs_reopen(fs, req->inode, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		ufs_budget_uncharge(&fs->budget, req->caller_uid, 1);
		return fd;
	}
	file = ufs_file_new(req->inode, fd, O_RDONLY | O_DIRECTORY);
	if (!file) {
		close(fd);
		ufs_budget_uncharge(&fs->budget, req->caller_uid, 1);
		return -ENOMEM;
	}
	file->is_dir = true;
	file->uid = req->caller_uid;
	file->charged = true;
	ufs_inode_ref(&fs->inodes, req->inode);
	ufs_file_pin(fs, file, false);
	ret = ufs_file_register(&fs->files, file, &fh);
	if (ret) {
		ufs_file_free(fs, file);
		return ret;
	}
	memset(out, 0, sizeof(*out));
	out->fh = fh;
	/*
	 * cache_readdir (init_negotiate.c): the kernel keeps the listing in
	 * the directory's page cache and serves the next opendir()s from it,
	 * no READDIR at all, until the directory changes
	 * (fuse_readdir_cached(), fs/fuse/readdir.c).
	 */
	if (listings_cached(fs, req->inode))
		out->open_flags = FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE;
	return sizeof(*out);
}

ssize_t ufs_op_releasedir(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_release_in *in = req->args.op;
	struct ufs_file *file = ufs_file_unregister(&fs->files, in->fh);

	if (!file)
		return -EBADF;
	ufs_file_free(fs, file);
	return 0;
}

ssize_t ufs_op_fsyncdir(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_fsync_in *in = req->args.op;
	struct ufs_file *file = NULL;
	int fd, ret;

	if (in->fh) {
		file = ufs_file_lookup(&fs->files, in->fh);
		if (!file || !file->is_dir)
			return -EBADF;
		fd = file->fd;
	} else {
		/* fsync is the inode's, whichever descriptor asks. */
		fd = ufs_dir_reopen(fs, req->inode);
		if (fd < 0)
			return fd;
	}
	if (in->fsync_flags & FUSE_FSYNC_FDATASYNC)
		ret = fdatasync(fd);
	else
		ret = fsync(fd);
	ret = ret ? -errno : 0;
	if (!file)
		close(fd);
	return ret;
}

/* Position the stream at cookie off; the buffer is only valid where it left off. */
static int dir_seek(struct ufs_file *dir, uint64_t off)
{
	if (dir->dir_buf && off == dir->dir_offset)
		return 0;
	if (lseek(dir->fd, off, SEEK_SET) < 0)
		return -errno;
	dir->dir_len = dir->dir_pos = 0;
	dir->dir_offset = off;
	return 0;
}

/* The next backing entry, refilling the buffer as needed; NULL at the end. */
static int dir_next(struct ufs_file *dir, struct linux_dirent64 **ent)
{
	long n;

	if (dir->dir_pos >= dir->dir_len) {
		if (!dir->dir_buf) {
			dir->dir_buf = malloc(DIR_BUF_SIZE);
			if (!dir->dir_buf)
				return -ENOMEM;
		}
		n = syscall(SYS_getdents64, dir->fd, dir->dir_buf, DIR_BUF_SIZE);
		if (n < 0)
			return -errno;
		dir->dir_len = n;
		dir->dir_pos = 0;
		if (!n) {
			*ent = NULL;
			return 0;
		}
	}
	*ent = (struct linux_dirent64 *)(dir->dir_buf + dir->dir_pos);
	return 0;
}

/* Consume the entry dir_next returned: the stream now stands at its d_off. */
static void dir_advance(struct ufs_file *dir, const struct linux_dirent64 *ent)
{
	dir->dir_pos += ent->d_reclen;
	dir->dir_offset = ent->d_off;
}

static bool is_dot_or_dotdot(const char *name)
{
	return name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
}

static size_t put_dirent(void *buf, const struct linux_dirent64 *ent, size_t namelen)
{
	struct fuse_dirent *d = buf;

	d->ino = ent->d_ino;
	d->off = ent->d_off;
	d->namelen = namelen;
	d->type = ent->d_type;
	memcpy(d->name, ent->d_name, namelen);
	memset(d->name + namelen, 0, FUSE_DIRENT_ALIGN(namelen) - namelen);
	return FUSE_NAME_OFFSET + FUSE_DIRENT_ALIGN(namelen);
}

/*
 * One entry for READDIRPLUS: the dirent plus a looked-up entry.  "." and
 * ".." and names that vanished meanwhile get nodeid 0, which the kernel
 * lists without instantiating.
 */
static int put_direntplus(struct ufs_fs *fs, struct ufs_inode *parent, void *buf,
			  const struct linux_dirent64 *ent, size_t namelen)
{
	struct fuse_direntplus *dp = buf;

	memset(&dp->entry_out, 0, sizeof(dp->entry_out));
	if (!is_dot_or_dotdot(ent->d_name) &&
	    ufs_do_lookup(fs, parent, ent->d_name, &dp->entry_out) == -ENOMEM)
		return -ENOMEM;
	put_dirent(&dp->dirent, ent, namelen);
	return 0;
}

/* Fill req's reply from dir's stream at in->offset; bytes used or -errno. */
static ssize_t fill_readdir(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *dir, bool plus)
{
	const struct fuse_read_in *in = req->args.op;
	size_t cap = in->size < req->out_cap ? in->size : req->out_cap;
	bool at_root = req->inode == fs->inodes.root && fs->control;
	uint8_t *out = req->out;
	size_t used = 0;
	int ret;

	ret = dir_seek(dir, in->offset);
	while (!ret) {
		struct linux_dirent64 *ent = NULL;
		size_t namelen, need;

		ret = dir_next(dir, &ent);
		if (ret || !ent)
			break;
		namelen = strlen(ent->d_name);
		/* The control file shadows a backing name: list neither. */
		if (at_root && ufs_is_control_name(fs, req->inode, ent->d_name)) {
			dir_advance(dir, ent);
			continue;
		}
		need = (plus ? FUSE_NAME_OFFSET_DIRENTPLUS : FUSE_NAME_OFFSET) +
		       FUSE_DIRENT_ALIGN(namelen);
		if (used + need > cap)
			break;
		if (plus)
			ret = put_direntplus(fs, req->inode, out + used, ent, namelen);
		else
			put_dirent(out + used, ent, namelen);
		if (ret)
			break;
		used += need;
		dir_advance(dir, ent);
	}
	/* An error after some entries still returns them; the next call sees it again. */
	if (ret && !used)
		return ret;
	return used;
}

/*
 * fh 0 (see the top): a stream of its own for this one request.  A
 * directory removed since lists as empty, as its descriptor would.
 */
static ssize_t readdir_reopened(struct ufs_fs *fs, struct ufs_req *req, bool plus)
{
	struct ufs_file dir;
	ssize_t ret;

	memset(&dir, 0, sizeof(dir));
	dir.fd = ufs_dir_reopen(fs, req->inode);
	if (dir.fd == -ENOENT || dir.fd == -ESTALE)
		return 0;
	if (dir.fd < 0)
		return dir.fd;
	dir.is_dir = true;
	ret = fill_readdir(fs, req, &dir, plus);
	free(dir.dir_buf);
	close(dir.fd);
	return ret;
}

static ssize_t do_readdir(struct ufs_fs *fs, struct ufs_req *req, bool plus)
{
	const struct fuse_read_in *in = req->args.op;
	struct ufs_file *dir;
	ssize_t ret;

	if (!in->fh)
		return readdir_reopened(fs, req, plus);
	dir = ufs_file_lookup(&fs->files, in->fh);
	if (!dir || !dir->is_dir)
		return -EBADF;
	ret = ufs_inode_dir_beneath(&fs->inodes, req->inode);
	if (ret)
		return ret;
	pthread_mutex_lock(&dir->dir_lock);
	ret = fill_readdir(fs, req, dir, plus);
	pthread_mutex_unlock(&dir->dir_lock);
	return ret;
}

ssize_t ufs_op_readdir(struct ufs_fs *fs, struct ufs_req *req)
{
	return do_readdir(fs, req, false);
}

ssize_t ufs_op_readdirplus(struct ufs_fs *fs, struct ufs_req *req)
{
	return do_readdir(fs, req, true);
}
