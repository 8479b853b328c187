// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: the request decoder against valid, truncated, oversized and
 * inconsistent requests, in the /dev/fuse (contiguous) and io_uring (split)
 * layouts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "init_negotiate.h"
#include "tap.h"

static struct ufs_conn conn = { .flags = FUSE_SETXATTR_EXT | FUSE_INIT_EXT };

/* A contiguous request as /dev/fuse delivers it. */
struct builder {
	uint8_t buf[8192] __attribute__((aligned(8)));
	size_t len;
};

static struct fuse_in_header *b_start(struct builder *b, uint32_t opcode)
{
	struct fuse_in_header *in = (void *)b->buf;

	memset(b, 0, sizeof(*b));
	in->opcode = opcode;
	in->unique = 2;
	in->nodeid = 1;
	b->len = sizeof(*in);
	return in;
}

static void b_put(struct builder *b, const void *p, size_t n)
{
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void b_str(struct builder *b, const char *s)
{
	b_put(b, s, strlen(s) + 1);
}

static int b_decode(struct builder *b, struct ufs_req *req, const char **why)
{
	struct fuse_in_header *in = (void *)b->buf;
	struct ufs_msg msg = {
		.in = in,
		.op = b->buf + sizeof(*in),
		.op_len = b->len - sizeof(*in),
	};

	in->len = b->len;
	memset(req, 0, sizeof(*req));
	return ufs_decode(&conn, &msg, req, why);
}

static void test_lookup(void)
{
	struct builder b;
	struct ufs_req req;
	const char *why;
	char longname[300];

	b_start(&b, FUSE_LOOKUP);
	b_str(&b, "hello");
	is_int(b_decode(&b, &req, &why), 0, "LOOKUP: valid name decodes");
	is_str(req.args.name, "hello", "LOOKUP: name");
	ok(req.args.name == req.names[0], "LOOKUP: name is copied out of the payload");

	b_start(&b, FUSE_LOOKUP);
	b_put(&b, "abc", 3);
	is_int(b_decode(&b, &req, &why), -EINVAL, "LOOKUP: name without NUL is refused");
	ok(why != NULL, "LOOKUP: refusal says why");

	b_start(&b, FUSE_LOOKUP);
	b_str(&b, "a/b");
	is_int(b_decode(&b, &req, &why), -EINVAL, "LOOKUP: name with '/' is refused");

	b_start(&b, FUSE_LOOKUP);
	b_str(&b, "");
	is_int(b_decode(&b, &req, &why), -EINVAL, "LOOKUP: empty name is refused");

	b_start(&b, FUSE_LOOKUP);
	b_str(&b, "..");
	is_int(b_decode(&b, &req, &why), 0, "LOOKUP: '..' is allowed (NFS export)");

	memset(longname, 'x', 256);
	longname[256] = '\0';
	b_start(&b, FUSE_LOOKUP);
	b_str(&b, longname);
	is_int(b_decode(&b, &req, &why), -ENAMETOOLONG, "LOOKUP: 256-byte name is ENAMETOOLONG");

	b_start(&b, FUSE_LOOKUP);
	b_str(&b, "x");
	b_put(&b, "junk", 4);
	is_int(b_decode(&b, &req, &why), -EINVAL, "LOOKUP: trailing bytes are refused");
}

static void test_fixed_args(void)
{
	struct fuse_getattr_in ga = { 0 };
	struct fuse_read_in rd = { .size = 4096 };
	struct builder b;
	struct ufs_req req;
	const char *why;

	b_start(&b, FUSE_GETATTR);
	b_put(&b, &ga, sizeof(ga));
	is_int(b_decode(&b, &req, &why), 0, "GETATTR: valid");
	ok(req.args.op == b.buf + sizeof(struct fuse_in_header), "GETATTR: op points after header");

	b_start(&b, FUSE_GETATTR);
	b_put(&b, &ga, sizeof(ga) - 1);
	is_int(b_decode(&b, &req, &why), -EINVAL, "GETATTR: truncated op struct is refused");

	b_start(&b, FUSE_READ);
	b_put(&b, &rd, sizeof(rd));
	b_put(&b, "x", 1);
	is_int(b_decode(&b, &req, &why), -EINVAL, "READ: oversized request is refused");

	b_start(&b, FUSE_READ);
	b_put(&b, &rd, 8);
	is_int(b_decode(&b, &req, &why), -EINVAL, "READ: truncated read_in is refused");

	b_start(&b, 9999);
	is_int(b_decode(&b, &req, &why), -ENOSYS, "unknown opcode gives ENOSYS");

	/* Both copy opcodes carry the same struct: the old one (before 7.45) too. */
	for (int i = 0; i < 2; i++) {
		struct fuse_copy_file_range_in cfr = { .len = 1 << 20 };
		uint32_t op = i ? FUSE_COPY_FILE_RANGE_64 : FUSE_COPY_FILE_RANGE;

		b_start(&b, op);
		b_put(&b, &cfr, sizeof(cfr));
		is_int(b_decode(&b, &req, &why), 0, i ? "COPY_FILE_RANGE_64: valid" :
						       "COPY_FILE_RANGE: valid");
		b_start(&b, op);
		b_put(&b, &cfr, sizeof(cfr) - 8);
		is_int(b_decode(&b, &req, &why), -EINVAL,
		       i ? "COPY_FILE_RANGE_64: truncated is refused" :
			   "COPY_FILE_RANGE: truncated is refused");
	}

	b_start(&b, FUSE_FORGET);
	{
		struct fuse_forget_in f = { .nlookup = 1 };

		b_put(&b, &f, sizeof(f));
	}
	is_int(b_decode(&b, &req, &why), 0, "FORGET: valid");
	ok(req.noreply, "FORGET: marked as expecting no reply");
}

static void test_write(void)
{
	struct fuse_write_in w = { .size = 5 };
	struct builder b;
	struct ufs_req req;
	const char *why;

	b_start(&b, FUSE_WRITE);
	b_put(&b, &w, sizeof(w));
	b_put(&b, "12345", 5);
	is_int(b_decode(&b, &req, &why), 0, "WRITE: size matches data");
	is_int(req.args.data_len, 5, "WRITE: data length");
	ok(!memcmp(req.args.data, "12345", 5), "WRITE: data pointer");

	b_start(&b, FUSE_WRITE);
	w.size = 6;
	b_put(&b, &w, sizeof(w));
	b_put(&b, "12345", 5);
	is_int(b_decode(&b, &req, &why), -EINVAL, "WRITE: size larger than data is refused");

	b_start(&b, FUSE_WRITE);
	w.size = 4;
	b_put(&b, &w, sizeof(w));
	b_put(&b, "12345", 5);
	is_int(b_decode(&b, &req, &why), -EINVAL, "WRITE: size smaller than data is refused");
}

static void test_names(void)
{
	struct fuse_rename2_in r = { .newdir = 1 };
	struct builder b;
	struct ufs_req req;
	const char *why;

	b_start(&b, FUSE_RENAME2);
	b_put(&b, &r, sizeof(r));
	b_str(&b, "old");
	b_str(&b, "new");
	is_int(b_decode(&b, &req, &why), 0, "RENAME2: two names");
	is_str(req.args.name, "old", "RENAME2: old name");
	is_str(req.args.name2, "new", "RENAME2: new name");

	b_start(&b, FUSE_RENAME2);
	b_put(&b, &r, sizeof(r));
	b_str(&b, "old");
	is_int(b_decode(&b, &req, &why), -EINVAL, "RENAME2: missing new name is refused");

	b_start(&b, FUSE_RENAME2);
	b_put(&b, &r, sizeof(r));
	b_str(&b, "old");
	b_str(&b, "..");
	is_int(b_decode(&b, &req, &why), -EINVAL, "RENAME2: '..' as a name is refused");

	b_start(&b, FUSE_SYMLINK);
	b_str(&b, "link");
	b_str(&b, "/etc/passwd");
	is_int(b_decode(&b, &req, &why), 0, "SYMLINK: name and target");
	is_str(req.args.name2, "/etc/passwd", "SYMLINK: target kept verbatim");

	b_start(&b, FUSE_MKDIR);
	{
		struct fuse_mkdir_in m = { .mode = 0755 };

		b_put(&b, &m, sizeof(m));
	}
	b_str(&b, ".");
	is_int(b_decode(&b, &req, &why), -EINVAL, "MKDIR: '.' is refused");

	is_int(ufs_name_check("ok", 2, false), 0, "name_check: plain name");
	is_int(ufs_name_check("a/b", 3, false), -EINVAL, "name_check: slash");
	is_int(ufs_name_check("", 0, false), -EINVAL, "name_check: empty");
	is_int(ufs_name_check("..", 2, true), 0, "name_check: dots allowed for lookup");
}

static void test_xattr(void)
{
	struct fuse_setxattr_in x = { .size = 3 };
	struct builder b;
	struct ufs_req req;
	const char *why;

	b_start(&b, FUSE_SETXATTR);
	b_put(&b, &x, sizeof(x));
	b_str(&b, "user.a");
	b_put(&b, "val", 3);
	is_int(b_decode(&b, &req, &why), 0, "SETXATTR: name and value");
	is_str(req.args.name, "user.a", "SETXATTR: name");
	is_int(req.args.data_len, 3, "SETXATTR: value length");

	b_start(&b, FUSE_SETXATTR);
	x.size = 70000;
	b_put(&b, &x, sizeof(x));
	b_str(&b, "user.a");
	is_int(b_decode(&b, &req, &why), -E2BIG, "SETXATTR: value over 64 KiB is refused");

	/* Without FUSE_SETXATTR_EXT the kernel sends the 8-byte struct. */
	conn.flags &= ~FUSE_SETXATTR_EXT;
	b_start(&b, FUSE_SETXATTR);
	x.size = 2;
	b_put(&b, &x, 8);
	b_str(&b, "user.b");
	b_put(&b, "zz", 2);
	is_int(b_decode(&b, &req, &why), 0, "SETXATTR: compat 8-byte struct without SETXATTR_EXT");
	is_str(req.args.name, "user.b", "SETXATTR: compat name");
	conn.flags |= FUSE_SETXATTR_EXT;
}

static void test_forgets(void)
{
	struct fuse_batch_forget_in bf = { .count = 2 };
	struct fuse_forget_one one[2] = { { 5, 1 }, { 6, 2 } };
	struct builder b;
	struct ufs_req req;
	const char *why;

	b_start(&b, FUSE_BATCH_FORGET);
	b_put(&b, &bf, sizeof(bf));
	b_put(&b, one, sizeof(one));
	is_int(b_decode(&b, &req, &why), 0, "BATCH_FORGET: two entries");
	is_int(req.args.forget_count, 2, "BATCH_FORGET: count");

	b_start(&b, FUSE_BATCH_FORGET);
	bf.count = 3;
	b_put(&b, &bf, sizeof(bf));
	b_put(&b, one, sizeof(one));
	is_int(b_decode(&b, &req, &why), -EINVAL, "BATCH_FORGET: count beyond the data is refused");

	b_start(&b, FUSE_BATCH_FORGET);
	bf.count = 0x40000000;
	b_put(&b, &bf, sizeof(bf));
	is_int(b_decode(&b, &req, &why), -EINVAL, "BATCH_FORGET: huge count is refused");
}

static void test_extensions(void)
{
	struct fuse_create_in c = { .mode = 0644 };
	struct builder b;
	struct ufs_req req;
	struct fuse_in_header *in;
	const char *why;
	struct {
		struct fuse_ext_header h;
		uint32_t nr;
		uint32_t gid;
	} ext = { { sizeof(ext), UFS_FUSE_EXT_GROUPS }, 1, 1234 };
	uint32_t gid;

	in = b_start(&b, FUSE_CREATE);
	b_put(&b, &c, sizeof(c));
	b_str(&b, "file");
	b_put(&b, "\0\0\0", 3);	/* pad the name to the extension's 8-byte unit */
	b_put(&b, &ext, sizeof(ext));
	/* Names are packed, not padded: drop the padding and keep the extension last. */
	memmove(b.buf + b.len - sizeof(ext) - 3, &ext, sizeof(ext));
	b.len -= 3;
	in->total_extlen = sizeof(ext) / 8;
	is_int(b_decode(&b, &req, &why), 0, "CREATE: supplementary-group extension");
	is_int(req.args.group_count, 1, "CREATE: one group");
	memcpy(&gid, req.args.groups, sizeof(gid));
	is_int(gid, 1234, "CREATE: group id read from an unaligned extension");

	in = b_start(&b, FUSE_CREATE);
	b_put(&b, &c, sizeof(c));
	b_str(&b, "f");
	in->total_extlen = 100;
	is_int(b_decode(&b, &req, &why), -EINVAL, "CREATE: extension longer than request is refused");

	in = b_start(&b, FUSE_CREATE);
	b_put(&b, &c, sizeof(c));
	b_str(&b, "file");
	ext.h.size = 4;
	b_put(&b, &ext, sizeof(ext));
	in->total_extlen = sizeof(ext) / 8;
	is_int(b_decode(&b, &req, &why), -EINVAL, "CREATE: malformed extension header is refused");
}

/* io_uring: the op struct in the header buffer's op_in, the rest in the payload. */
static void test_split_layout(void)
{
	struct fuse_in_header in = { .opcode = FUSE_WRITE, .unique = 9, .nodeid = 1 };
	uint8_t op_in[128] = { 0 };
	uint8_t payload[16] = "abcdefgh";
	struct fuse_write_in *w = (void *)op_in;
	struct ufs_msg msg = {
		.in = &in, .op = op_in, .op_len = sizeof(op_in), .rest = payload, .rest_len = 8,
	};
	struct ufs_req req;
	const char *why;

	w->size = 8;
	memset(&req, 0, sizeof(req));
	is_int(ufs_decode(&conn, &msg, &req, &why), 0, "split WRITE: decodes");
	ok(req.args.data == payload, "split WRITE: data is in the payload buffer");

	msg.rest_len = 7;
	is_int(ufs_decode(&conn, &msg, &req, &why), -EINVAL, "split WRITE: short payload refused");

	in.opcode = FUSE_LOOKUP;
	msg.rest = (const uint8_t *)"name";
	msg.rest_len = 5;
	is_int(ufs_decode(&conn, &msg, &req, &why), 0, "split LOOKUP: name from the payload");
	is_str(req.args.name, "name", "split LOOKUP: name");
}

int main(void)
{
	test_lookup();
	test_fixed_args();
	test_write();
	test_names();
	test_xattr();
	test_forgets();
	test_extensions();
	test_split_layout();
	return t_done();
}
