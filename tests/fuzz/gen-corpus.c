// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * gen-corpus: writes the seed inputs and the dictionaries of the fuzz
 * harnesses (make fuzz-seed).
 *
 *   OUT/corpus/fuzz-decode/seed-*     a valid request of every opcode the
 *                                     decoder knows, in both layouts' input
 *   OUT/corpus/fuzz-config/seed-*     ini files: every key of the settings
 *                                     table, continuation lines, comments
 *   OUT/corpus/fuzz-mountopts/seed-*  -o strings
 *   OUT/corpus/fuzz-init/seed-*       INIT offers of old and new kernels
 *   OUT/dict/NAME.dict                libFuzzer dictionaries
 *
 * The opcodes, their op struct sizes, the keys and their sections come from
 * the daemon's own tables, so the seeds follow the code.
 */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "decode.h"
#include "fuzz.h"
#include "init_negotiate.h"

static const char *out_dir;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "gen-corpus: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(1);
}

static void make_dir(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void make_dir(const char *fmt, ...)
{
	char path[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("mkdir %s", path);
}

static void put(const char *harness, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/corpus/%s/seed-%s", out_dir, harness, name);
	f = fopen(path, "we");
	if (!f || (len && fwrite(data, len, 1, f) != 1) || fclose(f))
		die("writing %s", path);
}

static FILE *dict_open(const char *harness)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dict/%s.dict", out_dir, harness);
	f = fopen(path, "we");
	if (!f)
		die("writing %s", path);
	fprintf(f, "# libFuzzer dictionary of %s, written by gen-corpus (make fuzz-seed).\n",
		harness);
	return f;
}

/* One dictionary entry: printable ASCII as is, the rest as \xNN. */
static void dict_put(FILE *f, const void *data, size_t len)
{
	const uint8_t *p = data;

	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
			fputc(p[i], f);
		else
			fprintf(f, "\\x%02x", p[i]);
	}
	fputs("\"\n", f);
}

static void dict_str(FILE *f, const char *s)
{
	dict_put(f, s, strlen(s));
}

/* ---- fuzz-decode ---- */

struct req {
	uint8_t buf[1024] __attribute__((aligned(8)));
	size_t len;
};

static const uint64_t conn_flags = FUSE_SETXATTR_EXT | FUSE_INIT_EXT | FUSE_CREATE_SUPP_GROUP;

static struct fuse_in_header *req_start(struct req *r, uint32_t opcode, uint64_t flags,
					size_t op_size)
{
	struct fuzz_decode_pre pre = { .conn_flags = flags, .conn_minor = UFS_FUSE_MINOR,
				       .split = op_size };
	struct fuse_in_header *in = (void *)(r->buf + sizeof(pre));

	memset(r, 0, sizeof(*r));
	memcpy(r->buf, &pre, sizeof(pre));
	in->opcode = opcode;
	in->unique = 42;
	in->nodeid = 1;
	in->uid = 1000;
	in->gid = 1000;
	in->pid = 4242;
	r->len = sizeof(pre) + sizeof(*in) + op_size;	/* the op struct, zeroed */
	return in;
}

static void *req_op(struct req *r)
{
	return r->buf + sizeof(struct fuzz_decode_pre) + sizeof(struct fuse_in_header);
}

static void req_put(struct req *r, const void *p, size_t n)
{
	memcpy(r->buf + r->len, p, n);
	r->len += n;
}

static void req_str(struct req *r, const char *s)
{
	req_put(r, s, strlen(s) + 1);
}

static void req_done(struct req *r, const char *name)
{
	struct fuse_in_header *in = (void *)(r->buf + sizeof(struct fuzz_decode_pre));

	in->len = r->len - sizeof(struct fuzz_decode_pre);
	put("fuzz-decode", name, r->buf, r->len);
}

/* The arguments after the op struct that make a valid request of this kind. */
static void decode_args(struct req *r, uint32_t opcode, const struct ufs_op_desc *d)
{
	void *op = req_op(r);

	switch ((enum ufs_arg_kind)d->args) {
	case UFS_ARGS_NONE:
		break;
	case UFS_ARGS_NAME:
	case UFS_ARGS_LOOKUP_NAME:
		req_str(r, "file.txt");
		break;
	case UFS_ARGS_TMPFILE_NAME:
		req_str(r, "/");
		break;
	case UFS_ARGS_TWO_NAMES:
		req_str(r, "old");
		req_str(r, "new");
		break;
	case UFS_ARGS_SYMLINK:
		req_str(r, "link");
		req_str(r, "../target/file");
		break;
	case UFS_ARGS_WRITE:
		((struct fuse_write_in *)op)->size = 5;
		req_put(r, "hello", 5);
		break;
	case UFS_ARGS_SETXATTR:
		((struct fuse_setxattr_in *)op)->size = 3;
		req_str(r, "user.test");
		req_put(r, "abc", 3);
		break;
	case UFS_ARGS_XATTR_NAME:
		req_str(r, "user.test");
		break;
	case UFS_ARGS_FORGETS: {
		struct fuse_forget_one f[2] = { { .nodeid = 2, .nlookup = 1 },
						{ .nodeid = 3, .nlookup = 7 } };

		((struct fuse_batch_forget_in *)op)->count = 2;
		req_put(r, f, sizeof(f));
		break;
	}
	case UFS_ARGS_IOCTL:
		((struct fuse_ioctl_in *)op)->in_size = 4;
		req_put(r, "\1\2\3\4", 4);
		break;
	case UFS_ARGS_ANY:
		if (opcode == FUSE_INIT) {
			struct fuse_init_in *init = op;

			init->major = FUSE_KERNEL_VERSION;
			init->minor = UFS_FUSE_MINOR;
		} else {
			req_put(r, "payload", 7);
		}
		break;
	}
}

static void gen_decode(void)
{
	/* fuse_ext_header (size, type), nr_groups, two gids, padding to 8 bytes. */
	static const uint32_t groups_ext[] = { 24, UFS_FUSE_EXT_GROUPS, 2, 100, 200, 0 };
	struct ufs_conn conn = { .flags = conn_flags };
	FILE *dict = dict_open("fuzz-decode");
	struct req r;

	make_dir("%s/corpus/fuzz-decode", out_dir);
	for (uint32_t opcode = 0; opcode < 4096; opcode++) {
		const struct ufs_op_desc *d = ufs_op_desc(opcode);

		if (!d)
			continue;
		req_start(&r, opcode, conn_flags, ufs_op_size(d, opcode, &conn));
		decode_args(&r, opcode, d);
		req_done(&r, d->name);
		dict_put(dict, &opcode, sizeof(opcode));
		if (d->op_size && d->op_size != 8)
			dict_put(dict, &d->op_size, sizeof(d->op_size));
	}

	/* The 7.32-and-older SETXATTR, without FUSE_SETXATTR_EXT. */
	conn.flags = FUSE_INIT_EXT;
	req_start(&r, FUSE_SETXATTR, conn.flags,
		  ufs_op_size(ufs_op_desc(FUSE_SETXATTR), FUSE_SETXATTR, &conn));
	decode_args(&r, FUSE_SETXATTR, ufs_op_desc(FUSE_SETXATTR));
	req_done(&r, "SETXATTR-compat");

	/* CREATE with a supplementary group extension (total_extlen counts 8 bytes). */
	req_start(&r, FUSE_CREATE, conn_flags, sizeof(struct fuse_create_in))->total_extlen =
		sizeof(groups_ext) / 8;
	req_str(&r, "newfile");
	req_put(&r, groups_ext, sizeof(groups_ext));
	req_done(&r, "CREATE-groups");

	/* An io_uring split in the wrong place, and an opcode nobody knows. */
	req_start(&r, FUSE_WRITE, conn_flags, sizeof(struct fuse_write_in));
	decode_args(&r, FUSE_WRITE, ufs_op_desc(FUSE_WRITE));
	((struct fuzz_decode_pre *)r.buf)->split = 128;
	req_done(&r, "WRITE-split128");
	req_start(&r, 4095, conn_flags, 16);
	req_done(&r, "unknown");

	dict_str(dict, "user.");
	dict_str(dict, "trusted.");
	dict_str(dict, "security.");
	dict_str(dict, "system.posix_acl_access");
	dict_str(dict, "..");
	dict_put(dict, groups_ext, 8);
	fclose(dict);
}

/* ---- fuzz-config ---- */

/* The settings as ini text: --print-config's output without its comments. */
static char *config_text(size_t *len)
{
	struct ufs_config cfg;
	char *text = NULL, *line, *save = NULL, *out;
	size_t n = 0, o = 0;
	FILE *f = open_memstream(&text, &n);

	if (!f)
		die("open_memstream");
	ufs_config_defaults(&cfg);
	ufs_config_print(&cfg, f);
	fclose(f);
	out = calloc(1, n + 1);
	if (!out)
		die("calloc");
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\t")] = '\0';
		/* An empty value is an error in a file: leave such keys out. */
		if (line[strlen(line) - 1] == '=' || strstr(line, "= (none)"))
			continue;
		o += sprintf(out + o, "%s\n", line);
	}
	free(text);
	*len = o;
	return out;
}

static void gen_config(void)
{
	static const char *const seeds[][2] = {
		{ "minimal", "[workers]\nworkers = 2\nio_uring = off\n" },
		{ "comments", "; a comment\n# another\n[fuse]\nmax_write = 128K ; inline\n" },
		{ "continuation", "[workers]\ncpus = 0-1\n  2-3\n" },
		{ "crlf", "[fuse]\r\nattr_timeout = 0.5\r\nallow_other\r\n" },
		{ "bom", "\xef\xbb\xbf[general]\nlog_level = debug\nstats_file = off\n" },
		{ "validate", "[workers]\nio_uring = off\nzero_copy = on\n" },
		{ "bad-section", "[nosuch]\nkey = 1\n" },
		{ "bad-value", "[backing]\nfd_cache = 1\n" },
		{ "syntax", "[fuse\nmax_write\n" },
	};
	static const char *const words[] = {
		"[", "]", " = ", "=", ":", ";", "#", "\n", "\r\n", "  ", "on", "off", "yes", "no",
		"true", "false", "auto", "ring", "thread", "sync", "allow", "deny", "never",
		"prefer", "mandatory", "debug", "info", "warn", "error", "K", "M", "G", "KiB",
		"MB", "0-3:6", "0.5", "1e3", "4096", "16777216", "65535", "86400",
	};
	FILE *dict = dict_open("fuzz-config");
	size_t len;
	char *all = config_text(&len);
	const char *key;

	make_dir("%s/corpus/fuzz-config", out_dir);
	put("fuzz-config", "all-keys", all, len);
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		put("fuzz-config", seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
	for (size_t i = 0; (key = ufs_config_key_at(i)); i++)
		dict_str(dict, key);
	for (char *p = all; (p = strchr(p, '[')); p++) {
		size_t n = strcspn(p, "\n");

		dict_put(dict, p, n);
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		dict_str(dict, words[i]);
	free(all);
	fclose(dict);
}

/* ---- fuzz-mountopts ---- */

static void gen_mountopts(void)
{
	static const char *const seeds[][2] = {
		{ "settings", "workers=2,io_uring=off,max_write=1M,attr_timeout=0.5" },
		{ "fstab", "defaults,allow_other,config=/etc/uringfs/x.conf,_netdev,nofail,"
			   "x-systemd.automount,noauto" },
		{ "kernel", "ro,nosuid,nodev,noatime,fsname=tank,subtype=x,context=system_u:r" },
		{ "escape", "cpus=0\\,1,fsname=a b" },
		{ "debug", "debug,default_permissions=off,stats_file=off" },
		{ "bad", "bogus=1" },
	};
	static const char *const words[] = {
		"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
		"atime", "noatime", "diratime", "nodiratime", "relatime", "norelatime",
		"strictatime", "nostrictatime", "lazytime", "nolazytime", "dirsync",
		"auto_unmount", "fsname=", "subtype=", "max_read=", "blksize=", "context=",
		"fscontext=", "defcontext=", "rootcontext=", "defaults", "_netdev", "nofail",
		"noauto", "auto", "user", "users", "nouser", "owner", "group", "nobootwait",
		"nosymfollow", "x-systemd.", "comment=", "config=", "debug", ",", "\\,", "\\\\",
		"=", "on", "off", "auto", "K", "M", "G",
	};
	FILE *dict = dict_open("fuzz-mountopts");
	const char *key;
	char all[4096];
	size_t n = 0;

	make_dir("%s/corpus/fuzz-mountopts", out_dir);
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		put("fuzz-mountopts", seeds[i][0], seeds[i][1], strlen(seeds[i][1]));
	for (size_t i = 0; (key = ufs_config_key_at(i)); i++) {
		char word[128];

		snprintf(word, sizeof(word), "%s=", key);
		dict_str(dict, word);
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		dict_str(dict, words[i]);
	/* Every key with its default value, as one -o string. */
	{
		size_t len;
		char *text = config_text(&len), *save = NULL;

		for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *eq = strstr(l, " = ");

			if (l[0] == '[' || !eq)
				continue;
			*eq = '\0';
			n += snprintf(all + n, sizeof(all) - n, "%s%s=%s", n ? "," : "", l, eq + 3);
		}
		free(text);
	}
	put("fuzz-mountopts", "all-keys", all, n);
	fclose(dict);
}

/* ---- fuzz-init ---- */

struct init_seed {
	uint32_t max_write;
	uint16_t request_timeout;
	uint8_t bools;
	uint8_t enums;
	struct fuse_init_in in;
};

static void gen_init(void)
{
	struct init_seed s = { .max_write = (1 << 20) - 4096, .request_timeout = 0,
			       .bools = 0xff, .enums = 2 };

	make_dir("%s/corpus/fuzz-init", out_dir);
	/* A 7.46 kernel offering everything. */
	s.in.major = FUSE_KERNEL_VERSION;
	s.in.minor = UFS_FUSE_MINOR;
	s.in.max_readahead = 128 << 10;
	s.in.flags = 0xffffffff;
	s.in.flags2 = 0xffffffff;
	put("fuzz-init", "7.46-all", &s, sizeof(s));
	/* Debian 12's 6.1 kernel: 7.38, no io_uring. */
	s.in.minor = 38;
	s.in.flags2 = (FUSE_CREATE_SUPP_GROUP | FUSE_HAS_EXPIRE_ONLY) >> 32;
	s.bools = 0x1f;
	s.enums = 1;
	s.request_timeout = 30;
	put("fuzz-init", "7.38", &s, sizeof(s));
	/* A 7.28 kernel sends the 16-byte struct. */
	s.in.minor = 28;
	s.in.flags = FUSE_ASYNC_READ | FUSE_MAX_PAGES | FUSE_BIG_WRITES;
	s.max_write = 128 << 10;
	put("fuzz-init", "7.28", &s, 8 + 16);
	/* Too old, and a major version from the future. */
	s.in.minor = 27;
	put("fuzz-init", "7.27", &s, 8 + 16);
	s.in.major = 8;
	put("fuzz-init", "8.0", &s, 8 + 16);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-corpus OUTDIR\n");
		return 2;
	}
	out_dir = argv[1];
	make_dir("%s", out_dir);
	make_dir("%s/corpus", out_dir);
	make_dir("%s/dict", out_dir);
	gen_decode();
	gen_config();
	gen_mountopts();
	gen_init();
	return 0;
}
