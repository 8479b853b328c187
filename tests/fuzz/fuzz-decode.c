// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-decode: ufs_decode() against arbitrary requests.
 *
 * Each input (struct fuzz_decode_pre, a fuse_in_header, the body) is decoded
 * three times, every buffer allocated to its exact size so that ASan sees a
 * read past the bytes a transport received:
 *
 *   1. as /dev/fuse delivers it: header and body in one buffer;
 *   2. as FUSE-over-io_uring delivers it, split at the input's chosen point:
 *      the header, a 128-byte op_in area holding the first bytes of the body
 *      (stale bytes after them), and a payload buffer with the rest;
 *   3. split where the kernel splits it, after the op struct; this decode
 *      must agree with the first.
 *
 * A successful decode must leave every pointer and length in req->args
 * inside the request, names NUL-terminated, file names without '/', and
 * data lengths equal to the size fields of the op struct.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "decode.h"
#include "fuzz.h"
#include "init_negotiate.h"

#define OP_IN_SIZE UFS_URING_OP_IN_OUT_SZ
#define STALE 0xa5	/* what an op_in area holds past the bytes the kernel copied */
#define EXT_ALIGN 8

/* One layout of one request, and where its pieces lie. */
struct layout {
	struct ufs_msg msg;
	const uint8_t *after;	/* the bytes after the op struct: cursor start */
	size_t after_len;	/* including the extensions */
	size_t op_size;
};

static size_t ext_len(const struct fuse_in_header *in)
{
	return (size_t)in->total_extlen * EXT_ALIGN;
}

static void check_file_name(const char *name, bool allow_dots, const char *what)
{
	size_t len;

	fuzz_check(name, "%s: NULL", what);
	len = strnlen(name, 256);
	fuzz_check(len < 256, "%s: not NUL-terminated within 256 bytes", what);
	fuzz_check(len >= 1 && len <= NAME_MAX, "%s: length %zu", what, len);
	fuzz_check(!strchr(name, '/'), "%s: contains '/'", what);
	if (!allow_dots)
		fuzz_check(strcmp(name, ".") && strcmp(name, ".."), "%s: is '%s'", what, name);
}

static void check_xattr_name(const struct ufs_req *req)
{
	const char *name = req->args.name;
	size_t len;

	fuzz_check(name == req->xattr_name, "xattr name not in req->xattr_name");
	len = strnlen(name, sizeof(req->xattr_name));
	fuzz_check(len >= 1 && len < sizeof(req->xattr_name), "xattr name length %zu", len);
}

/* Everything a successful decode returned lies inside this layout's request. */
static void check_success(const struct ufs_op_desc *desc, uint32_t opcode,
			  const struct layout *l, const struct ufs_req *req)
{
	const struct ufs_args *a = &req->args;
	/* Arguments proper end where the extensions begin. */
	size_t args_len = l->after_len - ext_len(l->msg.in);
	const uint8_t *ext = l->after + args_len;

	fuzz_check(l->after_len >= ext_len(l->msg.in), "extensions longer than the request");
	fuzz_check(req->in == l->msg.in, "req->in is not the header");
	fuzz_check(req->noreply == !!(desc->flags & UFS_OPF_NOREPLY), "noreply wrong");
	if (l->op_size) {
		fuzz_check(a->op == l->msg.op, "args.op is not the op struct");
		fuzz_check(l->msg.op_len >= l->op_size, "op struct truncated but accepted");
	} else {
		fuzz_check(!a->op, "args.op set for an opcode without an op struct");
	}
	if (a->data || a->data_len)
		fuzz_check(a->data && fuzz_inside(a->data, a->data_len, l->after, args_len),
			   "data (%zu bytes) outside the arguments", a->data_len);
	if (a->forgets || a->forget_count)
		fuzz_check(a->forgets && fuzz_inside(a->forgets,
						    (size_t)a->forget_count * sizeof(*a->forgets),
						    l->after, args_len),
			   "%u forgets outside the arguments", a->forget_count);
	if (a->groups || a->group_count)
		fuzz_check(a->groups && fuzz_inside(a->groups, (size_t)a->group_count * 4, ext,
						   ext_len(l->msg.in)),
			   "%u groups outside the extensions", a->group_count);

	switch ((enum ufs_arg_kind)desc->args) {
	case UFS_ARGS_NONE:
	case UFS_ARGS_TMPFILE_NAME:
		fuzz_check(!a->name && !a->name2 && !a->data && !a->forgets,
			   "%s: arguments returned for an opcode without any", desc->name);
		break;
	case UFS_ARGS_ANY:
		fuzz_check(a->data_len == args_len, "%s: data_len %zu, %zu bytes sent", desc->name,
			   a->data_len, args_len);
		break;
	case UFS_ARGS_NAME:
	case UFS_ARGS_LOOKUP_NAME:
		fuzz_check(a->name == req->names[0], "%s: name not copied", desc->name);
		check_file_name(a->name, desc->args == UFS_ARGS_LOOKUP_NAME, desc->name);
		fuzz_check(!a->name2, "%s: name2 set", desc->name);
		break;
	case UFS_ARGS_TWO_NAMES:
		fuzz_check(a->name == req->names[0] && a->name2 == req->names[1],
			   "%s: names not copied", desc->name);
		check_file_name(a->name, false, "old name");
		check_file_name(a->name2, false, "new name");
		break;
	case UFS_ARGS_SYMLINK: {
		size_t room;

		fuzz_check(a->name == req->names[0], "SYMLINK: name not copied");
		check_file_name(a->name, false, "SYMLINK name");
		/* The target is not copied: it must be a string inside the request. */
		fuzz_check(fuzz_inside(a->name2, 0, l->after, args_len), "target outside");
		room = l->after + args_len - (const uint8_t *)a->name2;
		fuzz_check(memchr(a->name2, '\0', room), "SYMLINK target not NUL-terminated");
		fuzz_check(strlen(a->name2) < PATH_MAX, "SYMLINK target too long");
		break;
	}
	case UFS_ARGS_WRITE: {
		const struct fuse_write_in *w = a->op;

		fuzz_check(a->data_len == w->size, "WRITE: data_len %zu, size %u", a->data_len,
			   w->size);
		break;
	}
	case UFS_ARGS_SETXATTR: {
		const struct fuse_setxattr_in *x = a->op;

		check_xattr_name(req);
		fuzz_check(a->data_len == x->size, "SETXATTR: data_len %zu, size %u", a->data_len,
			   x->size);
		fuzz_check(x->size <= 65536, "SETXATTR: value of %u bytes accepted", x->size);
		break;
	}
	case UFS_ARGS_XATTR_NAME:
		check_xattr_name(req);
		break;
	case UFS_ARGS_FORGETS: {
		const struct fuse_batch_forget_in *b = a->op;

		fuzz_check(a->forget_count == b->count, "BATCH_FORGET: %u forgets, count %u",
			   a->forget_count, b->count);
		break;
	}
	case UFS_ARGS_IOCTL: {
		const struct fuse_ioctl_in *io = a->op;

		fuzz_check(a->data_len == io->in_size, "IOCTL: data_len %zu, in_size %u",
			   a->data_len, io->in_size);
		break;
	}
	default:
		fuzz_fail(__FILE__, __LINE__, "opcode %u: unknown argument kind %u", opcode,
			  desc->args);
	}
}

static int decode(const struct ufs_conn *conn, const struct layout *l, struct ufs_req *req)
{
	const struct ufs_op_desc *desc = ufs_op_desc(l->msg.in->opcode);
	const char *why = NULL;
	int ret;

	/* Stale state from an earlier request must not leak into this one. */
	memset(req, 0x5a, sizeof(*req));
	ret = ufs_decode(conn, &l->msg, req, &why);
	if (!desc) {
		fuzz_check(ret == -ENOSYS, "unknown opcode %u: %d", l->msg.in->opcode, ret);
		return ret;
	}
	if (ret) {
		fuzz_check(ret == -EINVAL || ret == -ENAMETOOLONG || ret == -E2BIG,
			   "%s: unexpected error %d", desc->name, ret);
		fuzz_check(why && why[0], "%s: error %d without a reason", desc->name, ret);
		return ret;
	}
	check_success(desc, l->msg.in->opcode, l, req);
	return 0;
}

static size_t offset_in(const void *p, const uint8_t *base)
{
	return p ? (size_t)((const uint8_t *)p - base) + 1 : 0;
}

/* The contiguous and the kernel-split decodes of one request agree. */
static void check_same(const struct layout *l1, const struct ufs_req *r1,
		       const struct layout *l2, const struct ufs_req *r2)
{
	const struct ufs_args *a = &r1->args, *b = &r2->args;

	fuzz_check(!a->name == !b->name && (!a->name || !strcmp(a->name, b->name)),
		   "layouts disagree on name");
	fuzz_check(!a->name2 == !b->name2 && (!a->name2 || !strcmp(a->name2, b->name2)),
		   "layouts disagree on name2");
	fuzz_check(a->data_len == b->data_len &&
		   offset_in(a->data, l1->after) == offset_in(b->data, l2->after),
		   "layouts disagree on data");
	fuzz_check(a->forget_count == b->forget_count &&
		   offset_in(a->forgets, l1->after) == offset_in(b->forgets, l2->after),
		   "layouts disagree on forgets");
	fuzz_check(a->group_count == b->group_count &&
		   offset_in(a->groups, l1->after) == offset_in(b->groups, l2->after),
		   "layouts disagree on groups");
	fuzz_check(r1->noreply == r2->noreply, "layouts disagree on noreply");
}

/* The io_uring layout of header + body, with split body bytes in op_in. */
static int decode_split(const struct ufs_conn *conn, const struct fuse_in_header *hdr,
			const uint8_t *body, size_t body_len, size_t split, size_t op_size,
			struct layout *l, struct ufs_req *req, uint8_t **bufs)
{
	struct fuse_in_header *in = malloc(sizeof(*in));
	uint8_t *op = malloc(OP_IN_SIZE);
	uint8_t *rest = malloc(body_len - split);	/* malloc(0) too: never NULL */

	if (!in || !op || !rest)
		abort();
	memcpy(in, hdr, sizeof(*in));
	memset(op, STALE, OP_IN_SIZE);
	memcpy(op, body, split);
	memcpy(rest, body + split, body_len - split);
	*l = (struct layout){
		.msg = { .in = in, .op = op, .op_len = OP_IN_SIZE, .rest = rest,
			 .rest_len = body_len - split },
		.after = rest,
		.after_len = body_len - split,
		.op_size = op_size,
	};
	bufs[0] = (uint8_t *)in;
	bufs[1] = op;
	bufs[2] = rest;
	return decode(conn, l, req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ufs_req r1, r2, r3;
	const struct ufs_op_desc *desc;
	struct fuzz_decode_pre pre;
	struct fuse_in_header hdr;
	struct ufs_conn conn = { 0 };
	struct layout l1, l2, l3;
	uint8_t *buf, *bufs2[3], *bufs3[3] = { NULL, NULL, NULL };
	const uint8_t *body;
	size_t body_len, split, op_size = 0;
	int ret1, ret3;

	if (size < sizeof(pre) + sizeof(hdr))
		return -1;	/* not a request: keep it out of the corpus */
	memcpy(&pre, data, sizeof(pre));
	memcpy(&hdr, data + sizeof(pre), sizeof(hdr));
	body = data + sizeof(pre) + sizeof(hdr);
	body_len = size - sizeof(pre) - sizeof(hdr);
	conn.flags = pre.conn_flags;
	conn.offered = pre.conn_flags;
	conn.minor = pre.conn_minor;

	desc = ufs_op_desc(hdr.opcode);
	if (desc)
		op_size = ufs_op_size(desc, hdr.opcode, &conn);
	fuzz_check(op_size <= OP_IN_SIZE, "op struct of %zu bytes does not fit op_in", op_size);

	/* 1. /dev/fuse: one buffer, in->len checked by the transport. */
	buf = malloc(sizeof(hdr) + body_len);
	if (!buf)
		abort();
	memcpy(buf, &hdr, sizeof(hdr));
	((struct fuse_in_header *)buf)->len = sizeof(hdr) + body_len;
	memcpy(buf + sizeof(hdr), body, body_len);
	l1 = (struct layout){
		.msg = { .in = (void *)buf, .op = buf + sizeof(hdr), .op_len = body_len },
		.after = buf + sizeof(hdr) + (op_size < body_len ? op_size : body_len),
		.after_len = body_len > op_size ? body_len - op_size : 0,
		.op_size = op_size,
	};
	ret1 = decode(&conn, &l1, &r1);

	/* 2. io_uring, split where the input says (a kernel gone wrong). */
	split = pre.split % (OP_IN_SIZE + 1);
	if (split > body_len)
		split = body_len;
	decode_split(&conn, &hdr, body, body_len, split, op_size, &l2, &r2, bufs2);

	/* 3. io_uring as the kernel splits: the op struct in op_in. */
	if (desc && body_len >= op_size) {
		ret3 = decode_split(&conn, &hdr, body, body_len, op_size, op_size, &l3, &r3, bufs3);
		fuzz_check(ret1 == ret3, "%s: /dev/fuse layout gives %d, io_uring layout %d",
			   desc->name, ret1, ret3);
		if (!ret1)
			check_same(&l1, &r1, &l3, &r3);
	}

	free(buf);
	for (int i = 0; i < 3; i++) {
		free(bufs2[i]);
		free(bufs3[i]);
	}
	return 0;
}
