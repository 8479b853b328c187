// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: INIT negotiation against kernel offers of 6.18 (7.45, no
 * buffer pools) and 7.3 (7.46), with settings that turn features off.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "init_negotiate.h"
#include "tap.h"

static const struct ufs_init_limits lim4k = { .page_size = 4096, .max_pages_limit = 256 };

static struct fuse_init_in offer(uint32_t minor, uint64_t flags)
{
	struct fuse_init_in in = {
		.major = 7,
		.minor = minor,
		.max_readahead = 131072,
		.flags = (uint32_t)flags | FUSE_INIT_EXT,
		.flags2 = (uint32_t)(flags >> 32),
	};
	return in;
}

static const uint64_t linux_618 = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS | FUSE_ATOMIC_O_TRUNC |
				  FUSE_EXPORT_SUPPORT | FUSE_BIG_WRITES | FUSE_DONT_MASK |
				  FUSE_FLOCK_LOCKS | FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
				  FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2 | FUSE_POSIX_ACL |
				  FUSE_MAX_PAGES | FUSE_CACHE_SYMLINKS | FUSE_WRITEBACK_CACHE |
				  FUSE_SETXATTR_EXT | FUSE_CREATE_SUPP_GROUP | FUSE_PASSTHROUGH |
				  FUSE_REQUEST_TIMEOUT | FUSE_OVER_IO_URING;

static void test_defaults_618(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	is_int(ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn), 0, "6.18: accepted");
	is_int(out.minor, 46, "6.18: we announce 7.46");
	is_int(conn.minor, 45, "6.18: connection speaks 7.45");
	ok(conn.flags & FUSE_INIT_EXT, "6.18: FUSE_INIT_EXT set for flags2");
	ok(out.flags & FUSE_INIT_EXT, "6.18: FUSE_INIT_EXT in the reply");
	ok(out.flags2 & (FUSE_OVER_IO_URING >> 32), "6.18: io_uring accepted when wanted");
	ok(conn.uring && !conn.uring_bufpool, "6.18: uring without buffer pools");
	ok(!(conn.flags & FUSE_WRITEBACK_CACHE), "default: no writeback cache");
	ok(conn.flags & FUSE_PASSTHROUGH, "default: passthrough taken when offered");
	ok(conn.passthrough && !conn.passthrough_off_reason, "default: passthrough on, no reason");
	is_int(out.max_stack_depth, 1, "passthrough: max_stack_depth 1 (backing on ext4, tmpfs...)");
	ok(conn.flags & FUSE_POSIX_ACL, "default: the kernel enforces POSIX ACLs");
	ok(conn.flags & FUSE_DONT_MASK, "default: DONT_MASK for default ACLs");
	ok(!(conn.flags & (FUSE_POSIX_LOCKS | FUSE_FLOCK_LOCKS)), "default: the kernel locks locally");
	ok(conn.flags & FUSE_HANDLE_KILLPRIV_V2, "default: killpriv_v2");
	ok(!(conn.flags & FUSE_REQUEST_TIMEOUT), "default: no request timeout");
	is_int(out.max_write, 1 << 20, "max_write 1 MiB");
	is_int(out.max_pages, 256, "max_pages 256");
	is_int(conn.max_payload, 1 << 20, "io_uring payload = max_write");

	is_int(ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn), 0, "no rings: ok");
	ok(!(out.flags2 & (FUSE_OVER_IO_URING >> 32)), "no rings: io_uring declined");
	ok(conn.uring_off_reason != NULL, "no rings: a reason is given");
}

static void test_73(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(46, linux_618 | FUSE_HAS_IO_URING_BUFPOOL);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(conn.uring_bufpool, "7.3: buffer pools detected from flags2 bit 11");
	is_int(conn.minor, 46, "7.3: 7.46");
	ok(!(out.flags2 & (FUSE_HAS_IO_URING_BUFPOOL >> 32)), "7.3: bufpool bit not echoed");
}

static void test_passthrough(void)
{
	static const struct {
		int io_path;
		bool writeback;
		const char *reason;	/* NULL: passthrough taken */
	} cases[] = {
		{ UFS_IO_PATH_AUTO, false, NULL },
		{ UFS_IO_PATH_PASSTHROUGH, false, NULL },
		{ UFS_IO_PATH_ZERO_COPY, false, "io_path=zero_copy" },
		{ UFS_IO_PATH_COPY, false, "io_path=copy" },
		{ UFS_IO_PATH_AUTO, true, "writeback_cache=on" },
	};
	struct fuse_init_in in = offer(45, linux_618);
	struct ufs_config cfg;
	struct ufs_init_out out;
	struct ufs_conn conn;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ufs_config_defaults(&cfg);
		cfg.io_path = cases[i].io_path;
		cfg.writeback_cache = cases[i].writeback;
		ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
		if (!cases[i].reason) {
			ok(conn.passthrough && (out.flags2 & (FUSE_PASSTHROUGH >> 32)) &&
				   out.max_stack_depth == 1,
			   "io_path=%s: passthrough asked for", ufs_io_path_name(cases[i].io_path));
			continue;
		}
		ok(!conn.passthrough && !(out.flags2 & (FUSE_PASSTHROUGH >> 32)) &&
			   !out.max_stack_depth,
		   "%s: passthrough not asked for", cases[i].reason);
		is_str(conn.passthrough_off_reason, cases[i].reason, cases[i].reason);
	}
	/* A kernel before 6.9 (or without CONFIG_FUSE_PASSTHROUGH) does not offer it. */
	in = offer(39, linux_618 & ~FUSE_PASSTHROUGH);
	ufs_config_defaults(&cfg);
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(!conn.passthrough && strstr(conn.passthrough_off_reason, "did not offer"),
	   "not offered: off, and the reason names the kernel");
}

static void test_config_masks(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	cfg.posix_locks = true;
	cfg.flock_locks = false;
	cfg.writeback_cache = true;
	cfg.posix_acl = true;
	cfg.readdirplus = UFS_RDP_OFF;
	cfg.io_uring = UFS_SWITCH_OFF;
	cfg.request_timeout = 30;
	cfg.max_write = 128 << 10;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(conn.flags & FUSE_POSIX_LOCKS, "posix_locks on: negotiated");
	ok(!(conn.flags & FUSE_FLOCK_LOCKS), "flock_locks off: not negotiated");
	ok(conn.flags & FUSE_WRITEBACK_CACHE, "writeback_cache on: negotiated");
	ok(conn.flags & FUSE_POSIX_ACL, "posix_acl on: negotiated");
	ok(conn.flags & FUSE_DONT_MASK, "posix_acl on: DONT_MASK for default ACLs");
	ok(!(conn.flags & FUSE_DO_READDIRPLUS), "readdirplus off");
	is_str(conn.uring_off_reason, "io_uring=off", "io_uring=off is the reason");
	is_int(out.request_timeout, 30, "request_timeout sent");
	ok(conn.flags & FUSE_REQUEST_TIMEOUT, "request timeout negotiated");
	is_int(out.max_write, 128 << 10, "max_write 128 KiB");
	is_int(out.max_pages, 32, "max_pages follows max_write");

	/* FUSE_POSIX_ACL would turn default_permissions back on in the kernel. */
	ufs_config_defaults(&cfg);
	cfg.default_permissions = false;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & FUSE_POSIX_ACL), "default_permissions=off: no POSIX_ACL");
	ufs_config_defaults(&cfg);
	cfg.posix_acl = false;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & (FUSE_POSIX_ACL | FUSE_DONT_MASK)), "posix_acl=off: neither flag");
}

/*
 * FUSE_ALLOW_IDMAP: only with idmap=on, and never without
 * default_permissions (process_init_reply fails such a connection).
 */
static void test_idmap(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618 | FUSE_ALLOW_IDMAP);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(!(conn.flags & FUSE_ALLOW_IDMAP) && !conn.idmap, "default: no idmap");
	is_str(conn.idmap_off_reason, "idmap=off", "default: idmap=off is the reason");
	cfg.idmap = true;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(conn.idmap && (out.flags2 & (FUSE_ALLOW_IDMAP >> 32)), "idmap=on: in the reply's flags2");
	ok(!conn.idmap_off_reason, "idmap=on: no reason");
	cfg.default_permissions = false;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(!(out.flags2 & (FUSE_ALLOW_IDMAP >> 32)), "default_permissions=off: never asked");
	is_str(conn.idmap_off_reason, "default_permissions=off", "default_permissions=off: the reason");
	cfg.default_permissions = true;
	in = offer(40, linux_618);
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	ok(!conn.idmap, "a kernel before 6.12: not offered, not taken");
	ok(conn.idmap_off_reason && strstr(conn.idmap_off_reason, "6.12"), "names the kernel");
}

/* cache_readdir asks for FUSE_AUTO_INVAL_DATA, which fs_dir.c reads as "cache listings". */
static void test_cache_readdir(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618 | FUSE_AUTO_INVAL_DATA);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	/* cache=auto (the default) may be coherent: fs_dir.c decides per listing */
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(conn.flags & FUSE_AUTO_INVAL_DATA, "cache_readdir=auto, cache=auto: on");
	cfg.cache = UFS_CACHE_COHERENT;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(conn.flags & FUSE_AUTO_INVAL_DATA, "cache_readdir=auto, cache=coherent: on");
	cfg.cache = UFS_CACHE_NONE;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & FUSE_AUTO_INVAL_DATA), "cache_readdir=auto, cache=none: off");
	cfg.cache = UFS_CACHE_TIMEOUT;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & FUSE_AUTO_INVAL_DATA), "cache_readdir=auto, cache=timeout, 1 s: off");
	cfg.entry_timeout = cfg.attr_timeout = 60;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(conn.flags & FUSE_AUTO_INVAL_DATA, "cache_readdir=auto, 60 s timeouts: on");
	cfg.attr_timeout = 59;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & FUSE_AUTO_INVAL_DATA), "cache_readdir=auto, attr_timeout 59 s: off");
	cfg.cache_readdir = UFS_RDC_ON;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(conn.flags & FUSE_AUTO_INVAL_DATA, "cache_readdir=on: on");
	cfg.cache_readdir = UFS_RDC_OFF;
	cfg.attr_timeout = 86400;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, false, &out, &conn);
	ok(!(conn.flags & FUSE_AUTO_INVAL_DATA), "cache_readdir=off, day-long timeouts: off");
}

static void test_refusals(void)
{
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	in.major = 8;
	is_int(ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn), -EPROTO,
	       "major 8 refused");
	is_int(out.major, 7, "refusal tells the kernel our major");
	in = offer(20, FUSE_ASYNC_READ);
	is_int(ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn), -EPROTO,
	       "7.20 refused");

	/* An old kernel's short fuse_init_in: flags2 must not be read. */
	in = offer(45, linux_618);
	ufs_init_negotiate(&in, 16, &cfg, &lim4k, true, &out, &conn);
	ok(!(conn.flags >> 32), "short INIT: no flags2 bits used");
}

/* 64 KiB pages and the kernel's page cap shape max_pages and the payload size. */
static void test_limits(void)
{
	const struct ufs_init_limits lim64k = { .page_size = 65536, .max_pages_limit = 256 };
	const struct ufs_init_limits capped = { .page_size = 4096, .max_pages_limit = 64 };
	struct ufs_config cfg;
	struct fuse_init_in in = offer(45, linux_618);
	struct ufs_init_out out;
	struct ufs_conn conn;

	ufs_config_defaults(&cfg);
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim64k, true, &out, &conn);
	is_int(out.max_pages, 16, "64K pages: 16 pages per MiB");
	is_int(conn.max_payload, 1 << 20, "64K pages: payload = max_pages * PAGE_SIZE");
	ufs_init_negotiate(&in, sizeof(in), &cfg, &capped, true, &out, &conn);
	is_int(out.max_pages, 64, "max_pages_limit caps max_pages");
	is_int(out.max_write, 64 * 4096, "max_write follows the cap");
	is_int(conn.max_payload, 64 * 4096, "payload follows the cap");

	/* A request buffer holds a 64 KiB extended attribute, whatever max_write says. */
	ufs_config_defaults(&cfg);
	cfg.max_write = 4096;
	ufs_init_negotiate(&in, sizeof(in), &cfg, &lim4k, true, &out, &conn);
	is_int(out.max_write, 4096, "max_write=4096 is kept");
	is_int(out.max_pages, 17, "max_pages still holds an xattr (17 pages)");
	ok(conn.max_payload >= UFS_XATTR_PAYLOAD_MAX, "payload %zu holds an xattr", conn.max_payload);
	ok(conn.uring, "io_uring stays on");

	/* A max_pages_limit that cannot: no io_uring, and the reason says why. */
	const struct ufs_init_limits tiny = { .page_size = 4096, .max_pages_limit = 8 };

	ufs_init_negotiate(&in, sizeof(in), &cfg, &tiny, true, &out, &conn);
	ok(!conn.uring && !(out.flags2 & (FUSE_OVER_IO_URING >> 32)),
	   "max_pages_limit=8: io_uring declined");
	ok(conn.uring_off_reason && strstr(conn.uring_off_reason, "max_pages_limit"),
	   "the reason names max_pages_limit: %s", conn.uring_off_reason);
}

int main(void)
{
	test_limits();
	test_defaults_618();
	test_73();
	test_passthrough();
	test_config_masks();
	test_cache_readdir();
	test_idmap();
	test_refusals();
	return t_done();
}
