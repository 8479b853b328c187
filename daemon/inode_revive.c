// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store's entries that come back (inode_revive.c): a node id
 * the kernel forgot, asked for again from a file handle (LOOKUP "."), from
 * its export record; and at a successor's start, every node id of the
 * predecessor's record and the export store.  A record is data: what it
 * brings back is proven inside SOURCE before it is served.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "confine.h"
#include "fuse_abi.h"
#include "inode.h"
#include "inode_lookup.h"
#include "inode_revive.h"
#include "record.h"

static struct ufs_inode *revive(struct ufs_inode_store *inodes, uint64_t nodeid, bool dir_only);

static int found_in_parent(struct ufs_inode_store *inodes, uint64_t parent, dev_t dev, ino_t ino);

/*
 * A restored inode is proven inside SOURCE once, at its first reopen, as
 * LOOKUP proves what it finds: a record is data, and a file moved out of
 * SOURCE while no daemon ran must not be served.  A directory by the path
 * of its descriptor (its handle always opens a connected dentry); anything
 * else in the directory where a name last led to it (the record keeps it),
 * as a revived file is (found_in_parent): its handle opens a disconnected
 * dentry once the kernel has dropped the cached one, and then its path
 * proves nothing.  This costs a scan of that directory, once per restored
 * file.  Not found there (moved within SOURCE, or no parent recorded), the
 * path of its descriptor decides, and a disconnected one is refused
 * (ESTALE), the cautious answer.
 */
static int restored_verify(struct ufs_inode_store *inodes, struct ufs_inode *inode, int fd)
{
	uint64_t parent;

	pthread_mutex_lock(&inodes->inode_lock);
	parent = inode->parent;
	pthread_mutex_unlock(&inodes->inode_lock);
	if (inode->type != S_IFDIR && parent &&
	    !found_in_parent(inodes, parent, inode->dev, inode->ino))
		return 0;
	/* Or a connected dentry inside: moved within SOURCE, or its directory unknown. */
	return ufs_check_beneath_fd(inodes->confine, fd) ? -ESTALE : 0;
}

/*
 * Whether a file revived from its handle is still inside SOURCE: a name in
 * the directory where a name last led to it (inode->parent), a directory
 * itself inside SOURCE.  A file moved since, out of SOURCE or within it
 * behind the daemon's back, is stale: its handle no longer opens it.
 */
static int found_in_parent(struct ufs_inode_store *inodes, uint64_t parent, dev_t dev, ino_t ino)
{
	struct ufs_inode *dir;
	int ret;

	if (!parent)
		return -ESTALE;
	dir = ufs_inode_get(inodes, parent);
	if (!dir)
		dir = revive(inodes, parent, true);
	if (!dir)
		return -ESTALE;
	ret = dir->type == S_IFDIR ? ufs_inode_check_beneath(inodes, dir) : -ESTALE;
	if (!ret)
		ret = ufs_check_in_dir(dir->fd, dev, ino);
	ufs_inode_put(inodes, dir);
	return ret ? -ESTALE : 0;
}

/*
 * The kernel asks for a node id it forgot (LOOKUP "." from a file handle):
 * bring the inode back from its export record, pinned for the request with
 * no kernel lookups yet.  NULL (ESTALE) if there is no record, or the file
 * is gone or no longer inside SOURCE: a directory by its path, anything
 * else by its parent (found_in_parent).
 */
struct ufs_inode *ufs_inode_revive(struct ufs_inode_store *inodes, uint64_t nodeid)
{
	return revive(inodes, nodeid, false);
}

static struct ufs_inode *revive(struct ufs_inode_store *inodes, uint64_t nodeid, bool dir_only)
{
	struct ufs_export_copy rec;
	struct ufs_inode *fresh = NULL;
	bool revived = false;
	uint32_t slot = 0;
	struct stat st;
	int fd, ret;

	pthread_mutex_lock(&inodes->inode_lock);
	ret = ufs_export_copy_locked(&inodes->exports, nodeid, &rec);
	pthread_mutex_unlock(&inodes->inode_lock);
	if (ret)
		return ufs_inode_get(inodes, nodeid);	/* revived meanwhile, or none */
	if (dir_only && rec.type != S_IFDIR) {
		free(rec.handle);
		return NULL;	/* a parent that is no directory: the record is wrong */
	}

	fd = open_by_handle_at(rec.mount_fd, rec.handle, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		ret = -errno;
	else if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW))
		ret = -errno;
	if (!ret && (st.st_dev != rec.dev || st.st_ino != rec.ino ||
		     (st.st_mode & S_IFMT) != rec.type))
		ret = -ESTALE;
	if (!ret)
		ret = S_ISDIR(st.st_mode) ? ufs_check_beneath_fd(inodes->confine, fd) :
					    found_in_parent(inodes, rec.parent, rec.dev, rec.ino);
	if (!ret) {
		fresh = ufs_inode_new(rec.dev, rec.ino, rec.type, fd);
		ret = fresh ? 0 : -ENOMEM;
	}

	pthread_mutex_lock(&inodes->inode_lock);
	/* Unless another LOOKUP revived it first, or the record went meanwhile. */
	if (ret != -ENOMEM && !ufs_inode_find_by_id_locked(inodes, nodeid) &&
	    ufs_export_drop_locked(&inodes->exports, nodeid, ret != 0, &slot))
		revived = !ret;
	if (revived) {
		fresh->nodeid = nodeid;
		fresh->parent = rec.parent;
		fresh->handle = rec.handle;
		fresh->mount_fd = rec.mount_fd;
		fresh->mount_id = rec.mount_id;
		fresh->refs = 1;
		rec.handle = NULL;
		ufs_inode_record_revived_locked(inodes, fresh, slot);
		ufs_inode_insert_locked(inodes, fresh);
		inodes->fds_open++;
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	free(rec.handle);
	if (revived)
		return fresh;
	if (fresh)
		ufs_inode_free(inodes, fresh);	/* closes fd */
	else if (fd >= 0)
		close(fd);
	return ufs_inode_get(inodes, nodeid);
}

/* ---- a successor's start (restore.c) ---- */

/*
 * A node id from a predecessor's record (slot is its record + 1): an
 * evicted inode, reopened by its handle when first used, with the kernel's
 * lookups; or, if the kernel had forgotten it, an export record again.
 * Before any request is served.
 */
int ufs_inode_restore(struct ufs_inode_store *inodes, uint32_t slot,
		      const struct ufs_record_node *n)
{
	struct file_handle *fh;
	struct ufs_inode *inode;
	int mfd, ret = 0;

	if (n->nodeid <= FUSE_ROOT_ID || !n->handle_bytes ||
	    n->handle_bytes > UFS_RECORD_HANDLE_MAX || !inodes->handles.usable)
		return -EINVAL;
	fh = malloc(sizeof(*fh) + n->handle_bytes);
	inode = fh ? ufs_inode_new(n->dev, n->ino, n->type, -1) : NULL;
	if (!inode) {
		free(fh);
		return -ENOMEM;
	}
	fh->handle_bytes = n->handle_bytes;
	fh->handle_type = n->handle_type;
	memcpy(fh->f_handle, n->handle, n->handle_bytes);
	inode->handle = fh;
	inode->nodeid = n->nodeid;
	inode->nlookup = n->nlookup;
	inode->parent = n->parent;
	inode->mount_id = n->mount_id;
	inode->record_slot = slot;
	inode->unverified = true;	/* inode_reopen proves it inside SOURCE */
	inodes->verify = restored_verify;
	mfd = ufs_inode_handle_mount_fd(&inodes->handles, n->mount_id);
	pthread_mutex_lock(&inodes->inode_lock);
	if (mfd < 0 || ufs_inode_find_by_id_locked(inodes, n->nodeid) ||
	    ufs_export_has_locked(&inodes->exports, n->nodeid)) {
		ret = mfd < 0 ? -ENOENT : -EEXIST;
		ufs_record_node_drop(inodes->record, slot);
	} else if (n->flags & UFS_RECORD_NODE_EXPORTED) {
		struct ufs_export_key key;

		inode->mount_fd = mfd;
		inode->keyed = true;	/* what export.c asks of an inode it keeps */
		ufs_inode_export_key(inode, &key);
		ufs_export_keep_locked(&inodes->exports, &key);
	} else {
		bool dup = ufs_inode_find_by_key_locked(inodes, n->dev, n->ino) != NULL;

		inode->mount_fd = mfd;
		ufs_inode_insert_locked(inodes, inode);
		/* Two records of one key: this one waits for its FORGET unkeyed. */
		if (dup)
			ufs_inode_unkey_locked(inodes, inode);
		inode = NULL;
	}
	if (inodes->next_nodeid <= n->nodeid)
		inodes->next_nodeid = n->nodeid + 1;
	pthread_mutex_unlock(&inodes->inode_lock);
	if (inode) {
		inode->record_slot = 0;	/* kept by export.c, or not ours to drop */
		ufs_inode_free(inodes, inode);
	}
	return ret;
}

void ufs_inode_restore_done(struct ufs_inode_store *inodes, uint64_t next_nodeid)
{
	pthread_mutex_lock(&inodes->inode_lock);
	if (inodes->next_nodeid < next_nodeid)
		inodes->next_nodeid = next_nodeid;
	ufs_record_next_nodeid(inodes->record, inodes->next_nodeid);
	pthread_mutex_unlock(&inodes->inode_lock);
}

