// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-init: ufs_init_negotiate() against arbitrary INIT requests and
 * settings.
 *
 * Input: 8 bytes of settings (below), then the fuse_init_in bytes the kernel
 * sent, as many as there are (init_exchange.c passes at least 8).  The bytes are
 * copied to a buffer of exactly that size, so ASan sees a read of a field
 * that did not arrive.
 *
 * Invariants: every flag we accept was offered (FUSE_INIT_EXT aside) and
 * allowed by the settings; the reply's flags are the connection's;
 * max_write <= the configured max_write; max_pages * 4096 >= max_write when
 * FUSE_MAX_PAGES is accepted; the reply fits what the kernel accepts.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "config_check.h"
#include "fuzz.h"
#include "init_negotiate.h"

struct init_settings {
	uint32_t max_write;
	uint16_t request_timeout;
	uint8_t bools;		/* bit 7: want_uring */
	uint8_t enums;		/* readdirplus, io_uring; bits 4-5: page size, 6: page cap,
				 * 7: io_path=copy */
};

enum {
	B_ASYNC_READ = 1 << 0,
	B_LOCKS = 1 << 1,	/* posix_locks, flock_locks */
	B_EXPORT = 1 << 2,
	B_ACL = 1 << 3,		/* posix_acl; xattr is bit 4 */
	B_XATTR = 1 << 4,
	B_WRITEBACK = 1 << 5,
	B_MISC = 1 << 6,	/* parallel_dirops, killpriv_v2, cache_symlinks */
	B_WANT_URING = 1 << 7,
};

/* Flags that the settings rule out, or that the daemon never takes. */
static uint64_t forbidden(const struct ufs_config *cfg, bool want_uring)
{
	uint64_t f = 0;

	if (!cfg->async_read)
		f |= FUSE_ASYNC_READ;
	if (!cfg->posix_locks)
		f |= FUSE_POSIX_LOCKS;
	if (!cfg->flock_locks)
		f |= FUSE_FLOCK_LOCKS;
	if (!cfg->export_support)
		f |= FUSE_EXPORT_SUPPORT;
	if (cfg->readdirplus == UFS_RDP_OFF)
		f |= FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO;
	if (cfg->readdirplus == UFS_RDP_ON)
		f |= FUSE_READDIRPLUS_AUTO;
	if (!cfg->parallel_dirops)
		f |= FUSE_PARALLEL_DIROPS;
	if (!cfg->killpriv_v2)
		f |= FUSE_HANDLE_KILLPRIV_V2;
	if (!cfg->posix_acl || !cfg->xattr)
		f |= FUSE_POSIX_ACL;
	if (!cfg->cache_symlinks)
		f |= FUSE_CACHE_SYMLINKS;
	if (!cfg->writeback_cache)
		f |= FUSE_WRITEBACK_CACHE;
	if (!cfg->request_timeout)
		f |= FUSE_REQUEST_TIMEOUT;
	if (!want_uring)
		f |= FUSE_OVER_IO_URING;
	if (cfg->writeback_cache || cfg->io_path == UFS_IO_PATH_COPY ||
	    cfg->io_path == UFS_IO_PATH_ZERO_COPY)
		f |= FUSE_PASSTHROUGH;
	/* Features the daemon does not implement, whatever the kernel offers. */
	f |= FUSE_MAP_ALIGNMENT | FUSE_SUBMOUNTS | FUSE_SECURITY_CTX |
	     FUSE_HAS_INODE_DAX | FUSE_DIRECT_IO_ALLOW_MMAP | FUSE_ALLOW_IDMAP |
	     FUSE_NO_OPEN_SUPPORT | FUSE_NO_OPENDIR_SUPPORT | FUSE_EXPLICIT_INVAL_DATA |
	     FUSE_ABORT_ERROR | FUSE_HAS_EXPIRE_ONLY | FUSE_HAS_RESEND | FUSE_NO_EXPORT_SUPPORT;
	return f;
}

static void settings(const struct init_settings *s, struct ufs_config *cfg)
{
	ufs_config_defaults(cfg);
	/* Anything 4096..16M; validation below keeps only what the daemon accepts. */
	cfg->max_write = 4096 + s->max_write % ((16u << 20) - 4096 + 1);
	cfg->request_timeout = s->request_timeout;
	cfg->async_read = s->bools & B_ASYNC_READ;
	cfg->posix_locks = s->bools & B_LOCKS;
	cfg->flock_locks = !(s->bools & B_LOCKS);
	cfg->export_support = s->bools & B_EXPORT;
	cfg->posix_acl = s->bools & B_ACL;
	cfg->xattr = s->bools & B_XATTR;
	cfg->writeback_cache = s->bools & B_WRITEBACK;
	cfg->parallel_dirops = s->bools & B_MISC;
	cfg->killpriv_v2 = !(s->bools & B_MISC);
	cfg->cache_symlinks = s->bools & B_MISC;
	cfg->readdirplus = (s->enums & 3) % 3;
	cfg->io_uring = ((s->enums >> 2) & 3) % 3;
	cfg->io_path = s->enums & 0x80 ? UFS_IO_PATH_COPY : UFS_IO_PATH_AUTO;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct init_settings s;
	struct ufs_config cfg;
	struct ufs_config_error err;
	struct fuse_init_in full = { 0 };
	struct fuse_init_in *in;
	struct ufs_init_out out;
	struct ufs_conn conn;
	struct ufs_init_limits lim;
	uint64_t offered, accepted, ext = 0;
	size_t in_len;
	bool want_uring;
	int ret;

	if (size < sizeof(s) + 8)
		return -1;	/* init_exchange.c never passes fewer than 8 bytes */
	memcpy(&s, data, sizeof(s));
	settings(&s, &cfg);
	if (ufs_config_validate(&cfg, &err))
		return -1;
	want_uring = s.bools & B_WANT_URING;
	in_len = size - sizeof(s);
	in = malloc(in_len);
	if (!in)
		abort();
	memcpy(in, data + sizeof(s), in_len);
	memcpy(&full, in, in_len < sizeof(full) ? in_len : sizeof(full));

	/* The page size and the kernel's page cap vary too. */
	lim.page_size = (size_t)4096 << (s.enums >> 4 & 3);
	lim.max_pages_limit = s.enums & 0x40 ? 1 + s.request_timeout % 512 : 256;
	ret = ufs_init_negotiate(in, in_len, &cfg, &lim, want_uring, &out, &conn);
	free(in);

	fuzz_check(out.major == FUSE_KERNEL_VERSION && out.minor == UFS_FUSE_MINOR,
		   "reply speaks %u.%u", out.major, out.minor);
	if (full.major != FUSE_KERNEL_VERSION || full.minor < 28) {
		fuzz_check(ret == -EPROTO, "kernel %u.%u accepted (%d)", full.major, full.minor,
			   ret);
		return 0;
	}
	fuzz_check(!ret, "kernel %u.%u refused: %d", full.major, full.minor, ret);

	/*
	 * What the kernel offered, the bytes that did not arrive read as 0;
	 * flags2 only in a whole 7.36+ struct with FUSE_INIT_EXT.
	 */
	offered = full.flags;
	if (in_len >= offsetof(struct fuse_init_in, flags2) + 4 && (full.flags & FUSE_INIT_EXT))
		ext = (uint64_t)full.flags2 << 32;
	offered |= ext;
	accepted = out.flags | (uint64_t)out.flags2 << 32;

	fuzz_check(conn.offered == offered, "offered 0x%llx, recorded 0x%llx",
		   (unsigned long long)offered, (unsigned long long)conn.offered);
	fuzz_check(conn.flags == accepted, "reply flags 0x%llx, connection flags 0x%llx",
		   (unsigned long long)accepted, (unsigned long long)conn.flags);
	fuzz_check(!(accepted & ~offered & ~FUSE_INIT_EXT), "accepted 0x%llx not offered",
		   (unsigned long long)(accepted & ~offered & ~FUSE_INIT_EXT));
	fuzz_check(!out.flags2 || (out.flags & FUSE_INIT_EXT), "flags2 without FUSE_INIT_EXT");
	fuzz_check(!(accepted & forbidden(&cfg, want_uring)),
		   "accepted 0x%llx that the settings or the daemon rule out",
		   (unsigned long long)(accepted & forbidden(&cfg, want_uring)));
	fuzz_check(!(accepted & FUSE_PASSTHROUGH) == !out.max_stack_depth &&
			   out.max_stack_depth <= 1 && conn.passthrough == !!(accepted & FUSE_PASSTHROUGH),
		   "passthrough 0x%llx with max_stack_depth %u",
		   (unsigned long long)(accepted & FUSE_PASSTHROUGH), out.max_stack_depth);
	fuzz_check(conn.passthrough || conn.passthrough_off_reason, "passthrough off without a reason");
	fuzz_check(conn.minor == (full.minor < UFS_FUSE_MINOR ? full.minor : UFS_FUSE_MINOR),
		   "minor %u for a kernel speaking %u", conn.minor, full.minor);

	fuzz_check(out.max_write == conn.max_write, "reply max_write %u, connection %u",
		   out.max_write, conn.max_write);
	fuzz_check(conn.max_write >= 4096 && conn.max_write <= cfg.max_write,
		   "max_write %u, configured %u", conn.max_write, cfg.max_write);
	if (accepted & FUSE_MAX_PAGES) {
		fuzz_check(out.max_pages >= 1 && out.max_pages <= lim.max_pages_limit &&
				   (uint64_t)out.max_pages * lim.page_size >= out.max_write,
			   "max_pages %u for max_write %u", out.max_pages, out.max_write);
		fuzz_check(conn.max_pages == out.max_pages, "max_pages: reply %u, connection %u",
			   out.max_pages, conn.max_pages);
	} else {
		/* The kernel then sends at most FUSE_DEFAULT_MAX_PAGES_PER_REQ (32) pages. */
		fuzz_check(!out.max_pages, "max_pages %u without FUSE_MAX_PAGES", out.max_pages);
		fuzz_check(out.max_write <= 32 * lim.page_size, "max_write %u above 32 pages",
			   out.max_write);
	}
	fuzz_check(conn.max_payload >= conn.max_write &&
			   conn.max_payload >= (size_t)conn.max_pages * lim.page_size,
		   "max_payload %zu below max_write %u or max_pages %u", conn.max_payload,
		   conn.max_write, conn.max_pages);
	fuzz_check(out.max_readahead <= full.max_readahead, "max_readahead %u above %u",
		   out.max_readahead, full.max_readahead);
	fuzz_check(!out.request_timeout || (accepted & FUSE_REQUEST_TIMEOUT),
		   "request_timeout %u without FUSE_REQUEST_TIMEOUT", out.request_timeout);
	if (accepted & FUSE_REQUEST_TIMEOUT)
		fuzz_check(out.request_timeout == cfg.request_timeout, "request_timeout %u, set %u",
			   out.request_timeout, cfg.request_timeout);
	fuzz_check(conn.uring == !!(accepted & FUSE_OVER_IO_URING), "uring %d", conn.uring);
	fuzz_check(!conn.uring_bufpool || conn.uring, "bufpool without io_uring");
	fuzz_check(!conn.uring == !!conn.uring_off_reason, "uring %d, reason %s", conn.uring,
		   conn.uring_off_reason ? conn.uring_off_reason : "(none)");
	fuzz_check(out.max_background && out.congestion_threshold <= out.max_background,
		   "max_background %u, congestion_threshold %u", out.max_background,
		   out.congestion_threshold);
	return 0;
}
