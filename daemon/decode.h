/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The request decoder: checks every length of a request against what its
 * opcode carries and points req->args into it.  A pure function of the bytes
 * and the negotiated connection, so it can be unit tested and fuzzed.
 */
#ifndef UFS_DECODE_H
#define UFS_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuse_abi.h"
#include "req.h"

struct ufs_conn;

/*
 * A request as a transport received it.  /dev/fuse delivers one contiguous
 * message: op points just past the header and op_len covers everything
 * after it.  io_uring delivers the first argument in the header buffer's
 * op_in area and the rest in a payload buffer.
 */
struct ufs_msg {
	const struct fuse_in_header *in;
	const uint8_t *op;
	size_t op_len;
	const uint8_t *rest;		/* NULL for a contiguous message */
	size_t rest_len;
};

/* What an opcode carries after its fixed argument. */
enum ufs_arg_kind {
	UFS_ARGS_NONE,
	UFS_ARGS_NAME,			/* one name */
	UFS_ARGS_LOOKUP_NAME,		/* one name, "." and ".." allowed */
	UFS_ARGS_TMPFILE_NAME,		/* the kernel's placeholder name "/", unused */
	UFS_ARGS_TWO_NAMES,		/* RENAME, RENAME2 */
	UFS_ARGS_SYMLINK,		/* name, then target */
	UFS_ARGS_WRITE,			/* fuse_write_in.size bytes */
	UFS_ARGS_SETXATTR,		/* xattr name, then fuse_setxattr_in.size bytes */
	UFS_ARGS_XATTR_NAME,		/* GETXATTR, REMOVEXATTR */
	UFS_ARGS_FORGETS,		/* fuse_batch_forget_in.count fuse_forget_one */
	UFS_ARGS_IOCTL,			/* fuse_ioctl_in.in_size bytes */
	UFS_ARGS_ANY,			/* not inspected (NOTIFY_REPLY) */
};

enum ufs_op_flag {
	UFS_OPF_NOREPLY = 1 << 0,	/* the kernel expects no reply */
	UFS_OPF_INODE = 1 << 1,		/* in->nodeid names an inode the handler uses */
	UFS_OPF_CALLER = 1 << 2,	/* draws on its caller's share: req->caller_uid */
};

struct ufs_op_desc {
	const char *name;
	uint16_t op_size;		/* fixed first argument */
	uint8_t args;			/* enum ufs_arg_kind */
	uint8_t flags;			/* enum ufs_op_flag */
};

/* The descriptor of a known opcode, NULL for an unknown one. */
const struct ufs_op_desc *ufs_op_desc(uint32_t opcode);
const char *ufs_opcode_name(uint32_t opcode);

/* Size of the opcode's fixed argument on this connection. */
size_t ufs_op_size(const struct ufs_op_desc *desc, uint32_t opcode, const struct ufs_conn *conn);

/*
 * Decode msg into req->in, req->args and req->noreply.  Names are copied into
 * req->names, so a handler may write its reply over the payload.  Returns 0,
 * -ENOSYS for an unknown opcode, or a negative errno for a malformed
 * request, with *why set to a short description for the log.
 */
int ufs_decode(const struct ufs_conn *conn, const struct ufs_msg *msg, struct ufs_req *req,
	       const char **why);

/* A file name from the kernel: 1..NAME_MAX bytes, no '/'. */
int ufs_name_check(const char *name, size_t len, bool allow_dots);

#endif /* UFS_DECODE_H */
