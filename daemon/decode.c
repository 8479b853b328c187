// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Request decoding.  Nothing past the bytes a transport received is ever
 * read: every argument is bounds-checked here, before a handler runs.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "decode.h"
#include "init_negotiate.h"

#define XATTR_VALUE_MAX 65536	/* XATTR_SIZE_MAX */
#define EXT_ALIGN 8

#define OP(code, n, size, kind, fl) [code] = { .name = n, .op_size = size, .args = kind, .flags = fl }
#define INODE UFS_OPF_INODE
#define CALLER (UFS_OPF_INODE | UFS_OPF_CALLER)

static const struct ufs_op_desc op_table[] = {
	OP(FUSE_LOOKUP, "LOOKUP", 0, UFS_ARGS_LOOKUP_NAME, INODE),
	OP(FUSE_FORGET, "FORGET", sizeof(struct fuse_forget_in), UFS_ARGS_NONE, UFS_OPF_NOREPLY),
	OP(FUSE_GETATTR, "GETATTR", sizeof(struct fuse_getattr_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_SETATTR, "SETATTR", sizeof(struct fuse_setattr_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_READLINK, "READLINK", 0, UFS_ARGS_NONE, INODE),
	OP(FUSE_SYMLINK, "SYMLINK", 0, UFS_ARGS_SYMLINK, INODE),
	OP(FUSE_MKNOD, "MKNOD", sizeof(struct fuse_mknod_in), UFS_ARGS_NAME, INODE),
	OP(FUSE_MKDIR, "MKDIR", sizeof(struct fuse_mkdir_in), UFS_ARGS_NAME, INODE),
	OP(FUSE_UNLINK, "UNLINK", 0, UFS_ARGS_NAME, INODE),
	OP(FUSE_RMDIR, "RMDIR", 0, UFS_ARGS_NAME, INODE),
	OP(FUSE_RENAME, "RENAME", sizeof(struct fuse_rename_in), UFS_ARGS_TWO_NAMES, INODE),
	OP(FUSE_LINK, "LINK", sizeof(struct fuse_link_in), UFS_ARGS_NAME, INODE),
	OP(FUSE_OPEN, "OPEN", sizeof(struct fuse_open_in), UFS_ARGS_NONE, CALLER),
	OP(FUSE_READ, "READ", sizeof(struct fuse_read_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_WRITE, "WRITE", sizeof(struct fuse_write_in), UFS_ARGS_WRITE, INODE),
	OP(FUSE_STATFS, "STATFS", 0, UFS_ARGS_NONE, INODE),
	OP(FUSE_RELEASE, "RELEASE", sizeof(struct fuse_release_in), UFS_ARGS_NONE, 0),
	OP(FUSE_FSYNC, "FSYNC", sizeof(struct fuse_fsync_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_SETXATTR, "SETXATTR", sizeof(struct fuse_setxattr_in), UFS_ARGS_SETXATTR, INODE),
	OP(FUSE_GETXATTR, "GETXATTR", sizeof(struct fuse_getxattr_in), UFS_ARGS_XATTR_NAME, INODE),
	OP(FUSE_LISTXATTR, "LISTXATTR", sizeof(struct fuse_getxattr_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_REMOVEXATTR, "REMOVEXATTR", 0, UFS_ARGS_XATTR_NAME, INODE),
	OP(FUSE_FLUSH, "FLUSH", sizeof(struct fuse_flush_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_INIT, "INIT", sizeof(struct fuse_init_in), UFS_ARGS_ANY, 0),
	OP(FUSE_OPENDIR, "OPENDIR", sizeof(struct fuse_open_in), UFS_ARGS_NONE, CALLER),
	OP(FUSE_READDIR, "READDIR", sizeof(struct fuse_read_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_RELEASEDIR, "RELEASEDIR", sizeof(struct fuse_release_in), UFS_ARGS_NONE, 0),
	OP(FUSE_FSYNCDIR, "FSYNCDIR", sizeof(struct fuse_fsync_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_GETLK, "GETLK", sizeof(struct fuse_lk_in), UFS_ARGS_NONE, CALLER),
	OP(FUSE_SETLK, "SETLK", sizeof(struct fuse_lk_in), UFS_ARGS_NONE, CALLER),
	OP(FUSE_SETLKW, "SETLKW", sizeof(struct fuse_lk_in), UFS_ARGS_NONE, CALLER),
	OP(FUSE_ACCESS, "ACCESS", sizeof(struct fuse_access_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_CREATE, "CREATE", sizeof(struct fuse_create_in), UFS_ARGS_NAME, CALLER),
	OP(FUSE_INTERRUPT, "INTERRUPT", sizeof(struct fuse_interrupt_in), UFS_ARGS_NONE,
	   UFS_OPF_NOREPLY),
	OP(FUSE_BMAP, "BMAP", sizeof(struct fuse_bmap_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_DESTROY, "DESTROY", 0, UFS_ARGS_NONE, 0),
	OP(FUSE_IOCTL, "IOCTL", sizeof(struct fuse_ioctl_in), UFS_ARGS_IOCTL, INODE),
	OP(FUSE_POLL, "POLL", sizeof(struct fuse_poll_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_NOTIFY_REPLY, "NOTIFY_REPLY", 0, UFS_ARGS_ANY, UFS_OPF_NOREPLY),
	OP(FUSE_BATCH_FORGET, "BATCH_FORGET", sizeof(struct fuse_batch_forget_in),
	   UFS_ARGS_FORGETS, UFS_OPF_NOREPLY),
	OP(FUSE_FALLOCATE, "FALLOCATE", sizeof(struct fuse_fallocate_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_READDIRPLUS, "READDIRPLUS", sizeof(struct fuse_read_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_RENAME2, "RENAME2", sizeof(struct fuse_rename2_in), UFS_ARGS_TWO_NAMES, INODE),
	OP(FUSE_LSEEK, "LSEEK", sizeof(struct fuse_lseek_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_COPY_FILE_RANGE, "COPY_FILE_RANGE", sizeof(struct fuse_copy_file_range_in),
	   UFS_ARGS_NONE, INODE),
	OP(FUSE_SETUPMAPPING, "SETUPMAPPING", 0, UFS_ARGS_ANY, 0),
	OP(FUSE_REMOVEMAPPING, "REMOVEMAPPING", 0, UFS_ARGS_ANY, 0),
	OP(FUSE_SYNCFS, "SYNCFS", sizeof(struct fuse_syncfs_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_TMPFILE, "TMPFILE", sizeof(struct fuse_create_in), UFS_ARGS_TMPFILE_NAME, CALLER),
	OP(FUSE_STATX, "STATX", sizeof(struct fuse_statx_in), UFS_ARGS_NONE, INODE),
	OP(FUSE_COPY_FILE_RANGE_64, "COPY_FILE_RANGE_64", sizeof(struct fuse_copy_file_range_in),
	   UFS_ARGS_NONE, INODE),
};

#define OP_TABLE_SIZE (sizeof(op_table) / sizeof(op_table[0]))

const struct ufs_op_desc *ufs_op_desc(uint32_t opcode)
{
	if (opcode >= OP_TABLE_SIZE || !op_table[opcode].name)
		return NULL;
	return &op_table[opcode];
}

const char *ufs_opcode_name(uint32_t opcode)
{
	const struct ufs_op_desc *desc = ufs_op_desc(opcode);

	return desc ? desc->name : "UNKNOWN";
}

size_t ufs_op_size(const struct ufs_op_desc *desc, uint32_t opcode, const struct ufs_conn *conn)
{
	/* Without FUSE_SETXATTR_EXT the kernel sends the 7.32-and-older 8-byte struct. */
	if (opcode == FUSE_SETXATTR && !ufs_conn_has(conn, FUSE_SETXATTR_EXT))
		return FUSE_COMPAT_SETXATTR_IN_SIZE;
	return desc->op_size;
}

int ufs_name_check(const char *name, size_t len, bool allow_dots)
{
	if (!len)
		return -EINVAL;
	if (len > NAME_MAX)
		return -ENAMETOOLONG;
	if (memchr(name, '/', len))
		return -EINVAL;
	if (!allow_dots && name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return -EINVAL;
	return 0;
}

/* A cursor over the bytes after the fixed argument. */
struct cursor {
	const uint8_t *p;
	size_t left;
};

/* Take a NUL-terminated string of at most max bytes (without the NUL). */
static int take_string(struct cursor *c, const char **out, size_t *len, size_t max)
{
	const uint8_t *nul = memchr(c->p, '\0', c->left);

	if (!nul)
		return -EINVAL;
	*len = nul - c->p;
	if (*len > max)
		return -ENAMETOOLONG;
	*out = (const char *)c->p;
	c->p = nul + 1;
	c->left -= *len + 1;
	return 0;
}

/* Take a file name and keep a copy, so the reply may overwrite the payload. */
static int take_name(struct cursor *c, char *copy, bool allow_dots, const char **why)
{
	const char *name;
	size_t len;
	int ret;

	ret = take_string(c, &name, &len, SIZE_MAX);
	if (ret) {
		*why = "name not NUL-terminated";
		return ret;
	}
	ret = ufs_name_check(name, len, allow_dots);
	if (ret) {
		*why = ret == -ENAMETOOLONG ? "name longer than NAME_MAX" : "invalid name";
		return ret;
	}
	memcpy(copy, name, len + 1);
	return 0;
}

/*
 * The supplementary-group extension, the only one we negotiate.  Names of
 * any length come before it, so it may be unaligned: read it with memcpy.
 */
static int decode_extensions(const uint8_t *ext, size_t len, struct ufs_args *args,
			     const char **why)
{
	while (len) {
		struct fuse_ext_header h;
		uint32_t nr_groups;

		if (len < sizeof(h)) {
			*why = "malformed extension header";
			return -EINVAL;
		}
		memcpy(&h, ext, sizeof(h));
		if (h.size < sizeof(h) || h.size > len || h.size % EXT_ALIGN) {
			*why = "malformed extension header";
			return -EINVAL;
		}
		if (h.type == UFS_FUSE_EXT_GROUPS) {
			size_t body = h.size - sizeof(h);

			if (body < sizeof(nr_groups)) {
				*why = "malformed supplementary-group extension";
				return -EINVAL;
			}
			memcpy(&nr_groups, ext + sizeof(h), sizeof(nr_groups));
			if (nr_groups > (body - sizeof(nr_groups)) / sizeof(uint32_t)) {
				*why = "malformed supplementary-group extension";
				return -EINVAL;
			}
			args->groups = ext + sizeof(h) + sizeof(nr_groups);
			args->group_count = nr_groups;
		}
		ext += h.size;
		len -= h.size;
	}
	return 0;
}

static int expect_empty(const struct cursor *c, const char **why)
{
	if (c->left) {
		*why = "trailing bytes after the arguments";
		return -EINVAL;
	}
	return 0;
}

static int decode_args(const struct ufs_op_desc *desc, uint32_t opcode, struct cursor *c,
		       struct ufs_req *req, const char **why)
{
	struct ufs_args *args = &req->args;
	const char *s;
	size_t len;
	int ret;

	switch ((enum ufs_arg_kind)desc->args) {
	case UFS_ARGS_NONE:
		return expect_empty(c, why);
	case UFS_ARGS_ANY:
		args->data = c->p;
		args->data_len = c->left;
		return 0;
	case UFS_ARGS_NAME:
	case UFS_ARGS_LOOKUP_NAME:
		ret = take_name(c, req->names[0], desc->args == UFS_ARGS_LOOKUP_NAME, why);
		if (ret)
			return ret;
		args->name = req->names[0];
		return expect_empty(c, why);
	case UFS_ARGS_TMPFILE_NAME:
		/* The unnamed dentry of vfs_tmpfile() is called "/": check only its shape. */
		ret = take_string(c, &s, &len, NAME_MAX);
		if (ret) {
			*why = "TMPFILE name not NUL-terminated";
			return ret;
		}
		return expect_empty(c, why);
	case UFS_ARGS_TWO_NAMES:
		ret = take_name(c, req->names[0], false, why);
		if (!ret)
			ret = take_name(c, req->names[1], false, why);
		if (ret)
			return ret;
		args->name = req->names[0];
		args->name2 = req->names[1];
		return expect_empty(c, why);
	case UFS_ARGS_SYMLINK:
		ret = take_name(c, req->names[0], false, why);
		if (ret)
			return ret;
		args->name = req->names[0];
		ret = take_string(c, &s, &len, PATH_MAX - 1);
		if (ret) {
			*why = "symlink target not NUL-terminated or too long";
			return ret;
		}
		args->name2 = s;
		return expect_empty(c, why);
	case UFS_ARGS_WRITE: {
		const struct fuse_write_in *w = args->op;

		if (c->left != w->size) {
			*why = "WRITE size does not match the data sent";
			return -EINVAL;
		}
		args->data = c->p;
		args->data_len = c->left;
		return 0;
	}
	case UFS_ARGS_SETXATTR: {
		const struct fuse_setxattr_in *x = args->op;

		ret = take_string(c, &s, &len, sizeof(req->xattr_name) - 1);
		if (ret || !len) {
			*why = "xattr name missing, not NUL-terminated or too long";
			return ret ? ret : -EINVAL;
		}
		memcpy(req->xattr_name, s, len + 1);
		args->name = req->xattr_name;
		if (x->size > XATTR_VALUE_MAX) {
			*why = "xattr value larger than 64 KiB";
			return -E2BIG;
		}
		if (c->left != x->size) {
			*why = "SETXATTR size does not match the value sent";
			return -EINVAL;
		}
		args->data = c->p;
		args->data_len = c->left;
		return 0;
	}
	case UFS_ARGS_XATTR_NAME:
		ret = take_string(c, &s, &len, sizeof(req->xattr_name) - 1);
		if (ret || !len) {
			*why = "xattr name missing, not NUL-terminated or too long";
			return ret ? ret : -EINVAL;
		}
		memcpy(req->xattr_name, s, len + 1);
		args->name = req->xattr_name;
		return expect_empty(c, why);
	case UFS_ARGS_FORGETS: {
		const struct fuse_batch_forget_in *b = args->op;

		if (b->count > c->left / sizeof(struct fuse_forget_one)) {
			*why = "BATCH_FORGET count exceeds the data sent";
			return -EINVAL;
		}
		args->forgets = (const void *)c->p;
		args->forget_count = b->count;
		return 0;
	}
	case UFS_ARGS_IOCTL: {
		const struct fuse_ioctl_in *io = args->op;

		if (c->left != io->in_size) {
			*why = "IOCTL in_size does not match the data sent";
			return -EINVAL;
		}
		args->data = c->p;
		args->data_len = c->left;
		return 0;
	}
	}
	(void)opcode;
	*why = "bad descriptor";
	return -EINVAL;
}

int ufs_decode(const struct ufs_conn *conn, const struct ufs_msg *msg, struct ufs_req *req,
	       const char **why)
{
	const struct fuse_in_header *in = msg->in;
	const struct ufs_op_desc *desc;
	struct cursor c;
	size_t op_size, ext_len;
	int ret;

	*why = NULL;
	memset(&req->args, 0, sizeof(req->args));
	req->in = in;
	req->noreply = false;

	desc = ufs_op_desc(in->opcode);
	if (!desc) {
		*why = "unknown opcode";
		return -ENOSYS;
	}
	req->noreply = desc->flags & UFS_OPF_NOREPLY;

	op_size = ufs_op_size(desc, in->opcode, conn);
	if (msg->op_len < op_size) {
		*why = "request shorter than its fixed argument";
		return -EINVAL;
	}
	req->args.op = op_size ? msg->op : NULL;
	if (msg->rest) {
		c.p = msg->rest;
		c.left = msg->rest_len;
	} else {
		c.p = msg->op + op_size;
		c.left = msg->op_len - op_size;
	}

	/* Extensions (total_extlen 8-byte units) sit at the very end. */
	ext_len = (size_t)in->total_extlen * EXT_ALIGN;
	if (ext_len > c.left) {
		*why = "extension length exceeds the request";
		return -EINVAL;
	}
	c.left -= ext_len;
	ret = decode_extensions(c.p + c.left, ext_len, &req->args, why);
	if (ret)
		return ret;
	return decode_args(desc, in->opcode, &c, req, why);
}
