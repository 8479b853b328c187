/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE connection: what INIT negotiated.  Written once by the INIT
 * reply, before any worker starts; read-only afterwards.
 */
#ifndef UFS_INIT_NEGOTIATE_H
#define UFS_INIT_NEGOTIATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "fuse_abi.h"

/*
 * The largest payload that is not file data: a SETXATTR's name and value
 * (XATTR_NAME_MAX + 1 + XATTR_SIZE_MAX), beyond a GETXATTR value or a
 * LISTXATTR list (XATTR_SIZE_MAX, XATTR_LIST_MAX).  Every request buffer
 * must hold it, whatever max_write says.
 */
#define UFS_XATTR_PAYLOAD_MAX (256 + 65536)

struct ufs_conn {
	uint32_t minor;			/* protocol minor both sides speak */
	uint64_t offered;		/* flags the kernel offered */
	uint64_t flags;			/* flags we accepted */
	uint32_t max_write;
	uint32_t max_pages;
	uint32_t max_readahead;
	size_t max_payload;		/* io_uring payload buffer size the kernel computes */
	bool uring;			/* FUSE_OVER_IO_URING accepted */
	bool uring_bufpool;		/* the kernel has ADD_QUEUE, ADD_BUFPOOL, zero copy */
	bool uring_offered;
	const char *uring_off_reason;	/* why not, for the log and stats */
	bool passthrough;		/* FUSE_PASSTHROUGH accepted */
	const char *passthrough_off_reason;
	bool idmap;			/* FUSE_ALLOW_IDMAP accepted: idmapped mounts allowed */
	const char *idmap_off_reason;
};

/*
 * Decide the INIT reply from the kernel's offer and the configuration.
 * in_len is the number of bytes of fuse_init_in that arrived.  want_uring
 * says the daemon can serve io_uring (config allows it and the rings can be
 * built).  Returns 0, or -EPROTO when the kernel speaks an unsupported major
 * version (out->major then tells the kernel ours).
 */
/* What the kernel allows around INIT, read from the running system. */
struct ufs_init_limits {
	size_t page_size;		/* the kernel's PAGE_SIZE */
	unsigned int max_pages_limit;	/* fs.fuse.max_pages_limit */
};

/* This machine's limits; defaults where they cannot be read. */
void ufs_init_limits_read(struct ufs_init_limits *lim);

int ufs_init_negotiate(const struct fuse_init_in *in, size_t in_len, const struct ufs_config *cfg,
		       const struct ufs_init_limits *lim, bool want_uring,
		       struct ufs_init_out *out, struct ufs_conn *conn);

/*
 * Long enough that a listing's names and attributes outlive the listing:
 * below it READDIRPLUS refreshing them is worth more than a cached listing
 * (which fills no dentry and no attribute, so every stat after it would be
 * a LOOKUP).
 */
#define UFS_CACHE_READDIR_MIN_TIMEOUT 60.0

static inline bool ufs_conn_has(const struct ufs_conn *conn, uint64_t flag)
{
	return (conn->flags & flag) != 0;
}

#endif /* UFS_INIT_NEGOTIATE_H */
