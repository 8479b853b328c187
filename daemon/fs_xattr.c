// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extended attributes: SETXATTR, GETXATTR, LISTXATTR, REMOVEXATTR.
 *
 * glibc has no *xattrat() calls, so an inode is named by its own descriptor
 * as /proc/self/fd/N.  The kernel does not follow a symlink reached through
 * such a magic link, so a symlink's own attributes are the ones touched and
 * nothing outside SOURCE is.  The trusted. and security. namespaces follow
 * the xattr_trusted and xattr_security settings.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "caller.h"
#include "fs.h"
#include "fs_xattr.h"
#include "init_negotiate.h"

#define ACL_ACCESS "system.posix_acl_access"

static int xattr_path(const struct ufs_inode *inode, char *path, size_t len)
{
	int n = snprintf(path, len, "/proc/self/fd/%d", inode->fd);

	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static bool has_prefix(const char *name, const char *prefix)
{
	return !strncmp(name, prefix, strlen(prefix));
}

/*
 * Is this attribute name out of reach by the namespace policy?  Beyond it,
 * trusted.* needs CAP_SYS_ADMIN, which the kernel checks before it sends a
 * GETXATTR, SETXATTR or REMOVEXATTR (fs/xattr.c: xattr_permission); only
 * lists are left to the file system, see xattr_list_filter.
 */
static bool xattr_denied(const struct ufs_fs *fs, const char *name)
{
	if (has_prefix(name, "trusted."))
		return fs->cfg->xattr_trusted == UFS_XATTR_DENY;
	if (has_prefix(name, "security."))
		return fs->cfg->xattr_security == UFS_XATTR_DENY;
	return false;
}

/*
 * With FUSE_POSIX_ACL the kernel reads a file's ACLs to check permission,
 * and takes only "none" (ENODATA) for an answer without one: EOPNOTSUPP
 * from a file system that has no ACLs (ramfs, vfat, a submount of SOURCE)
 * would fail every permission check on it (fs/fuse/acl.c: __fuse_get_acl).
 * A file there has no ACL, which is what ENODATA says.
 */
static int acl_errno(const char *name, int err)
{
	if (err == -EOPNOTSUPP && has_prefix(name, "system.posix_acl_"))
		return -ENODATA;
	return err;
}

static int xattr_prepare(struct ufs_fs *fs, struct ufs_req *req, char *path, size_t len)
{
	int ret;

	if (!fs->cfg->xattr)
		return -EOPNOTSUPP;
	if (req->inode->control)
		return -ENODATA;
	ret = ufs_inode_dir_beneath(&fs->inodes, req->inode);
	if (ret)
		return ret;
	return xattr_path(req->inode, path, len);
}

/*
 * Every handler but the creating ones runs with the daemon's rights, so
 * POSIX ACLs, of SOURCE or of any file system mounted below it, are
 * enforced through the mount only by the kernel, which does it with
 * FUSE_POSIX_ACL (and default_permissions, which that implies).  Returns
 * NULL when they are, else the reason they would not be; conn is NULL
 * before INIT.
 */
const char *ufs_acls_unenforced(const struct ufs_config *cfg, const struct ufs_conn *conn)
{
	if (!cfg->xattr)
		return "xattr=off";
	if (!cfg->posix_acl)
		return "posix_acl=off";
	if (!cfg->default_permissions)
		return "default_permissions=off";
	if (conn && !ufs_conn_has(conn, FUSE_POSIX_ACL))
		return "the kernel did not offer FUSE_POSIX_ACL";
	return NULL;
}

ssize_t ufs_op_setxattr(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_setxattr_in *in = req->args.op;
	const char *name = req->args.name;
	char path[64];
	struct stat st;
	int ret;

	ret = xattr_prepare(fs, req, path, sizeof(path));
	if (ret)
		return ret == -ENODATA ? -EPERM : ret;
	if (xattr_denied(fs, name))
		return -EPERM;
	if (setxattr(path, name, req->args.data, req->args.data_len, in->flags))
		return -errno;
	/*
	 * Setting an access ACL drops setgid when the caller is not in the
	 * owning group; the kernel tells us with FUSE_SETXATTR_ACL_KILL_SGID.
	 */
	if (ufs_conn_has(fs->conn, FUSE_SETXATTR_EXT) &&
	    (in->setxattr_flags & FUSE_SETXATTR_ACL_KILL_SGID) && !strcmp(name, ACL_ACCESS) &&
	    !stat(path, &st) && (st.st_mode & S_ISGID))
		chmod(path, st.st_mode & 07777 & ~S_ISGID);
	return 0;
}

ssize_t ufs_op_getxattr(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_getxattr_in *in = req->args.op;
	char path[64];
	ssize_t n;
	int ret;

	ret = xattr_prepare(fs, req, path, sizeof(path));
	if (ret)
		return ret;
	if (xattr_denied(fs, req->args.name))
		return -ENODATA;
	if (!in->size) {
		struct fuse_getxattr_out *out = req->out;

		n = getxattr(path, req->args.name, NULL, 0);
		if (n < 0)
			return acl_errno(req->args.name, -errno);
		memset(out, 0, sizeof(*out));
		out->size = n;
		return sizeof(*out);
	}
	n = getxattr(path, req->args.name, req->out,
		     in->size < req->out_cap ? in->size : req->out_cap);
	return n < 0 ? acl_errno(req->args.name, -errno) : n;
}

/*
 * Drop the names the policy hides from a listxattr buffer, and trusted.*
 * for a caller without CAP_SYS_ADMIN, as ext4 and xfs do (the kernel leaves
 * lists to the file system).  Returns the new length.
 */
static size_t xattr_list_filter(const struct ufs_fs *fs, const struct ufs_req *req, char *list,
				size_t len)
{
	size_t in = 0, out = 0;
	int admin = -1;		/* asked only if a trusted.* name is there */

	while (in < len) {
		size_t n = strnlen(list + in, len - in) + 1;
		bool hidden = xattr_denied(fs, list + in);

		if (!hidden && has_prefix(list + in, "trusted.")) {
			if (admin < 0)
				admin = ufs_caller_capable(req, CAP_SYS_ADMIN);
			hidden = !admin;
		}
		if (!hidden) {
			memmove(list + out, list + in, n);
			out += n;
		}
		in += n;
	}
	return out;
}

ssize_t ufs_op_listxattr(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_getxattr_in *in = req->args.op;
	char path[64];
	size_t cap;
	ssize_t n;
	int ret;

	ret = xattr_prepare(fs, req, path, sizeof(path));
	if (ret)
		return ret == -ENODATA ? 0 : ret;
	/*
	 * Filtering may shrink the list, so always fetch all of it; the
	 * reply buffer holds any list the kernel accepts (XATTR_LIST_MAX).
	 */
	cap = req->out_cap;
	n = listxattr(path, req->out, cap);
	if (n < 0)
		return -errno;
	n = xattr_list_filter(fs, req, req->out, n);
	if (!in->size) {
		struct fuse_getxattr_out *out = req->out;

		memset(out, 0, sizeof(*out));
		out->size = n;
		return sizeof(*out);
	}
	return (size_t)n > in->size ? -ERANGE : n;
}

ssize_t ufs_op_removexattr(struct ufs_fs *fs, struct ufs_req *req)
{
	char path[64];
	int ret;

	ret = xattr_prepare(fs, req, path, sizeof(path));
	if (ret)
		return ret == -ENODATA ? -EPERM : ret;
	if (xattr_denied(fs, req->args.name))
		return -EPERM;
	return removexattr(path, req->args.name) ? -errno : 0;
}
