// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * INIT negotiation: a pure function of the kernel's offer and the settings,
 * so the unit tests can drive it with any offer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "init_negotiate.h"

#define DEFAULT_MAX_PAGES_LIMIT 256	/* the kernel's default fs.fuse.max_pages_limit */

/* Flags we take whenever the kernel offers them. */
static const uint64_t always_wanted = FUSE_ASYNC_READ | FUSE_POSIX_LOCKS | FUSE_ATOMIC_O_TRUNC |
				      FUSE_EXPORT_SUPPORT | FUSE_BIG_WRITES | FUSE_DONT_MASK |
				      FUSE_FLOCK_LOCKS | FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO |
				      FUSE_ASYNC_DIO | FUSE_PARALLEL_DIROPS | FUSE_HANDLE_KILLPRIV_V2 |
				      FUSE_POSIX_ACL | FUSE_MAX_PAGES | FUSE_CACHE_SYMLINKS |
				      FUSE_WRITEBACK_CACHE | FUSE_SETXATTR_EXT | FUSE_INIT_EXT |
				      FUSE_CREATE_SUPP_GROUP | FUSE_REQUEST_TIMEOUT |
				      FUSE_OVER_IO_URING | FUSE_PASSTHROUGH |
				      FUSE_AUTO_INVAL_DATA | FUSE_ALLOW_IDMAP;

/*
 * cache_readdir: OPENDIR replies FOPEN_CACHE_DIR | FOPEN_KEEP_CACHE
 * (fs_dir.c) when the connection has FUSE_AUTO_INVAL_DATA, which is asked
 * for only with it.  FUSE_AUTO_INVAL_DATA is what keeps the cached listing
 * honest: fuse_readdir_cached() (fs/fuse/readdir.c) refreshes the
 * directory's mtime (a GETATTR once attr_timeout has run out, or once a
 * FUSE_NOTIFY_INVAL_* dropped the attributes) before each listing from
 * offset 0, and drops the cache when mtime, the kernel's own i_version
 * (bumped by every change made through the mount) or the epoch moved.
 * Without it the kernel would trust an mtime it never refreshes.
 */
static bool cache_readdir_on(const struct ufs_config *cfg)
{
	/*
	 * auto: also wherever the cache policy seeks coherence, whose long
	 * timeouts are known only once the watcher starts; fs_dir.c then
	 * caches listings only if they are long (ufs_dir_listings_cached).
	 */
	if (cfg->cache_readdir == UFS_RDC_AUTO)
		return (cfg->entry_timeout >= UFS_CACHE_READDIR_MIN_TIMEOUT &&
			cfg->attr_timeout >= UFS_CACHE_READDIR_MIN_TIMEOUT) ||
		       cfg->cache == UFS_CACHE_AUTO || cfg->cache == UFS_CACHE_COHERENT;
	return cfg->cache_readdir == UFS_RDC_ON;
}

/* Why the settings keep kernel passthrough off, or NULL. */
static const char *passthrough_off_reason(const struct ufs_config *cfg)
{
	if (cfg->io_path == UFS_IO_PATH_ZERO_COPY)
		return "io_path=zero_copy";
	if (cfg->io_path == UFS_IO_PATH_COPY)
		return "io_path=copy";
	/* process_init_reply: the kernel takes one or the other, never both. */
	if (cfg->writeback_cache)
		return "writeback_cache=on";
	return NULL;
}

/* Flags the settings can turn off, and the setting that does it. */
static uint64_t config_mask(const struct ufs_config *cfg, bool want_uring)
{
	uint64_t mask = ~0ULL;

	if (!cfg->async_read)
		mask &= ~FUSE_ASYNC_READ;
	if (!cfg->posix_locks)
		mask &= ~FUSE_POSIX_LOCKS;
	if (!cfg->flock_locks)
		mask &= ~FUSE_FLOCK_LOCKS;
	if (!cfg->export_support)
		mask &= ~FUSE_EXPORT_SUPPORT;
	if (cfg->readdirplus == UFS_RDP_OFF)
		mask &= ~(FUSE_DO_READDIRPLUS | FUSE_READDIRPLUS_AUTO);
	else if (cfg->readdirplus == UFS_RDP_ON)
		mask &= ~FUSE_READDIRPLUS_AUTO;
	if (!cache_readdir_on(cfg))
		mask &= ~FUSE_AUTO_INVAL_DATA;
	if (!cfg->parallel_dirops)
		mask &= ~FUSE_PARALLEL_DIROPS;
	if (!cfg->killpriv_v2)
		mask &= ~FUSE_HANDLE_KILLPRIV_V2;
	/*
	 * FUSE_POSIX_ACL turns default_permissions on in the kernel
	 * (process_init_reply): leave it out when that is switched off.
	 */
	if (!cfg->posix_acl || !cfg->xattr || !cfg->default_permissions)
		mask &= ~(FUSE_POSIX_ACL | FUSE_DONT_MASK);
	/*
	 * process_init_reply fails the connection on FUSE_ALLOW_IDMAP without
	 * default_permissions: an idmapped mount is checked by the kernel.
	 */
	if (!cfg->idmap || !cfg->default_permissions)
		mask &= ~FUSE_ALLOW_IDMAP;
	if (!cfg->cache_symlinks)
		mask &= ~FUSE_CACHE_SYMLINKS;
	if (!cfg->writeback_cache)
		mask &= ~FUSE_WRITEBACK_CACHE;
	if (!cfg->request_timeout)
		mask &= ~FUSE_REQUEST_TIMEOUT;
	if (!want_uring)
		mask &= ~FUSE_OVER_IO_URING;
	if (passthrough_off_reason(cfg))
		mask &= ~FUSE_PASSTHROUGH;
	return mask;
}

static uint64_t offered_flags(const struct fuse_init_in *in, size_t in_len)
{
	uint64_t flags = in->flags;

	/* flags2 exists only when the kernel sent the whole 7.36+ struct. */
	if (in_len >= offsetof(struct fuse_init_in, flags2) + sizeof(in->flags2) &&
	    (in->flags & FUSE_INIT_EXT))
		flags |= (uint64_t)in->flags2 << 32;
	return flags;
}

static const char *uring_off_reason(const struct ufs_config *cfg, bool want_uring,
				    uint64_t offered)
{
	if (cfg->io_uring == UFS_SWITCH_OFF)
		return "io_uring=off";
	if (!(offered & FUSE_OVER_IO_URING))
		return "kernel did not offer FUSE_OVER_IO_URING (enable_uring=N or kernel < 6.14)";
	if (!want_uring)
		return "io_uring rings unavailable";
	return NULL;
}

void ufs_init_limits_read(struct ufs_init_limits *lim)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned int limit;
	FILE *f;

	lim->page_size = page > 0 ? (size_t)page : 4096;
	lim->max_pages_limit = DEFAULT_MAX_PAGES_LIMIT;
	f = fopen("/proc/sys/fs/fuse/max_pages_limit", "re");
	if (f) {
		if (fscanf(f, "%u", &limit) == 1 && limit)
			lim->max_pages_limit = limit;
		fclose(f);
	}
}

int ufs_init_negotiate(const struct fuse_init_in *arrived, size_t in_len,
		       const struct ufs_config *cfg, const struct ufs_init_limits *lim,
		       bool want_uring, struct ufs_init_out *out, struct ufs_conn *conn)
{
	/* Fields the kernel did not send read as 0, never past its bytes. */
	struct fuse_init_in copy = { 0 };
	const struct fuse_init_in *in = &copy;
	size_t page = lim->page_size;
	uint64_t flags;
	uint32_t max_pages;

	memcpy(&copy, arrived, in_len < sizeof(copy) ? in_len : sizeof(copy));
	memset(out, 0, sizeof(*out));
	memset(conn, 0, sizeof(*conn));
	out->major = FUSE_KERNEL_VERSION;
	out->minor = UFS_FUSE_MINOR;
	if (in->major != FUSE_KERNEL_VERSION)
		return -EPROTO;
	/* 7.28 added max_pages and COPY_FILE_RANGE; older kernels are out of scope. */
	if (in->minor < 28)
		return -EPROTO;

	conn->minor = in->minor < UFS_FUSE_MINOR ? in->minor : UFS_FUSE_MINOR;
	conn->offered = offered_flags(in, in_len);
	flags = conn->offered & always_wanted & config_mask(cfg, want_uring);
	/* Bits 32 and up are read only with FUSE_INIT_EXT in the reply. */
	if (flags >> 32)
		flags |= FUSE_INIT_EXT;
	conn->flags = flags;

	/*
	 * The kernel caps max_pages at fs.fuse.max_pages_limit, and a
	 * max_write above max_pages pages only inflates every io_uring payload
	 * buffer (max_payload_sz takes the larger): keep them equal, but never
	 * below an extended attribute's size.  Over io_uring the kernel copies
	 * a request's payload into the entry's buffer and a reply's out of it
	 * without checking its length (fs/fuse/dev_uring.c:
	 * fuse_uring_args_to_ring, fuse_uring_copy_from_ring), so a 64 KiB
	 * SETXATTR or GETXATTR must fit: max_write alone may be smaller.
	 */
	max_pages = (cfg->max_write + page - 1) / page;
	if (max_pages < (UFS_XATTR_PAYLOAD_MAX + page - 1) / page)
		max_pages = (UFS_XATTR_PAYLOAD_MAX + page - 1) / page;
	if (!(flags & FUSE_MAX_PAGES))
		max_pages = 32; /* FUSE_DEFAULT_MAX_PAGES_PER_REQ */
	if (max_pages > lim->max_pages_limit)
		max_pages = lim->max_pages_limit;
	if (max_pages > 65535)
		max_pages = 65535;
	conn->max_pages = max_pages;
	conn->max_write = max_pages * page;
	if (conn->max_write > cfg->max_write)
		conn->max_write = cfg->max_write;
	conn->max_readahead = in->max_readahead;
	/* The kernel's max_payload_sz: max(8192, max_write, max_pages * PAGE_SIZE). */
	conn->max_payload = conn->max_write > 8192 ? conn->max_write : 8192;
	if ((size_t)max_pages * page > conn->max_payload)
		conn->max_payload = (size_t)max_pages * page;

	conn->uring_offered = (conn->offered & FUSE_OVER_IO_URING) != 0;
	if (conn->max_payload < UFS_XATTR_PAYLOAD_MAX && (flags & FUSE_OVER_IO_URING)) {
		/* fs.fuse.max_pages_limit below 17 pages: the ring cannot hold one. */
		flags &= ~FUSE_OVER_IO_URING;
		conn->flags = flags;
		conn->uring_off_reason = "fs.fuse.max_pages_limit is too small for io_uring "
					 "payload buffers to hold a 64 KiB extended attribute";
	}
	conn->uring = (flags & FUSE_OVER_IO_URING) != 0;
	conn->uring_bufpool = conn->uring && (conn->offered & FUSE_HAS_IO_URING_BUFPOOL);
	if (!conn->uring && !conn->uring_off_reason)
		conn->uring_off_reason = uring_off_reason(cfg, want_uring, conn->offered);

	conn->idmap = (flags & FUSE_ALLOW_IDMAP) != 0;
	if (!conn->idmap)
		conn->idmap_off_reason = !cfg->idmap ? "idmap=off" :
					 !cfg->default_permissions ? "default_permissions=off" :
					 "the kernel did not offer FUSE_ALLOW_IDMAP (Linux 6.12 needed)";

	conn->passthrough = (flags & FUSE_PASSTHROUGH) != 0;
	if (!conn->passthrough)
		conn->passthrough_off_reason = passthrough_off_reason(cfg) ?:
			"the kernel did not offer FUSE_PASSTHROUGH (Linux 6.9 and CONFIG_FUSE_PASSTHROUGH needed)";

	out->max_readahead = in->max_readahead;
	out->flags = (uint32_t)flags;
	out->flags2 = (uint32_t)(flags >> 32);
	out->max_background = 64;
	out->congestion_threshold = 48;
	out->max_write = conn->max_write;
	out->time_gran = 1;
	out->max_pages = flags & FUSE_MAX_PAGES ? max_pages : 0;
	if (flags & FUSE_REQUEST_TIMEOUT)
		out->request_timeout = cfg->request_timeout;
	/*
	 * Backing files may sit on any file system that is not itself
	 * stacked (ext4, xfs, btrfs, tmpfs; not overlayfs): depth 1 makes this
	 * mount depth 1 (fs/fuse/inode.c: process_init_reply), and BACKING_OPEN
	 * refuses a deeper backing with ELOOP.
	 */
	if (conn->passthrough)
		out->max_stack_depth = 1;
	return 0;
}
