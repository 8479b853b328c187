/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kernel ABI that Debian 12's headers predate.
 *
 * <linux/fuse.h> in bookworm is protocol 7.38 and liburing 2.3 ships an
 * io_uring.h from Linux 6.1.  uringfs speaks FUSE up to 7.46 (Linux 7.3):
 * statx, COPY_FILE_RANGE_64, FUSE-over-io_uring with ADD_QUEUE, buffer pools
 * and zero copy.  Everything missing is defined here, each item guarded so a
 * newer system header wins, and every layout is pinned by _Static_assert
 * against the values in Documentation and include/uapi/linux/fuse.h.
 *
 * Three structures changed layout after they first appeared (fuse_init_out
 * grew named tail fields in 7.40/7.43, fuse_open_out.padding became
 * backing_id in 7.40, fuse_uring_cmd_req grew from 24 to 40 bytes and
 * fuse_uring_ent_in_out.padding became offset in 7.46).  A guard cannot
 * redefine those, so they get ufs_ names here with the 7.46 layout.
 */
#ifndef UFS_FUSE_ABI_H
#define UFS_FUSE_ABI_H

#include <stddef.h>
#include <stdint.h>
#include <linux/fuse.h>
#include <liburing.h>

#define UFS_FUSE_MINOR 46

/* 7.38 */
#ifndef FUSE_CREATE_SUPP_GROUP
#define FUSE_CREATE_SUPP_GROUP (1ULL << 34)
#endif
#ifndef FUSE_HAS_EXPIRE_ONLY
#define FUSE_HAS_EXPIRE_ONLY (1ULL << 35)
#endif

/* 7.39 .. 7.46 INIT flags */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif
#ifndef FUSE_PASSTHROUGH
#define FUSE_PASSTHROUGH (1ULL << 37)
#endif
#ifndef FUSE_NO_EXPORT_SUPPORT
#define FUSE_NO_EXPORT_SUPPORT (1ULL << 38)
#endif
#ifndef FUSE_HAS_RESEND
#define FUSE_HAS_RESEND (1ULL << 39)
#endif
#ifndef FUSE_ALLOW_IDMAP
#define FUSE_ALLOW_IDMAP (1ULL << 40)
#endif
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ULL << 41)
#endif
#ifndef FUSE_REQUEST_TIMEOUT
#define FUSE_REQUEST_TIMEOUT (1ULL << 42)
#endif
#ifndef FUSE_HAS_IO_URING_BUFPOOL
#define FUSE_HAS_IO_URING_BUFPOOL (1ULL << 43)
#endif

#ifndef FOPEN_PASSTHROUGH
#define FOPEN_PASSTHROUGH (1 << 7)
#endif
#ifndef FOPEN_IO_URING_ZERO_COPY
#define FOPEN_IO_URING_ZERO_COPY (1 << 8)
#endif

#ifndef FUSE_UNIQUE_RESEND
#define FUSE_UNIQUE_RESEND (1ULL << 63)
#endif
#ifndef FUSE_INVALID_UIDGID
#define FUSE_INVALID_UIDGID ((uint32_t)(-1))
#endif

/*
 * Opcodes and notification codes are enumerators, not macros: test the
 * header's protocol minor instead.
 */
/* Linux 6.1's 7.38 header predates the 7.38 supplementary-group extension. */
#define UFS_FUSE_EXT_GROUPS 32
#if FUSE_KERNEL_MINOR_VERSION < 39
#define FUSE_STATX 52
#endif
#if FUSE_KERNEL_MINOR_VERSION < 40
#define FUSE_NOTIFY_RESEND 7
#endif
#if FUSE_KERNEL_MINOR_VERSION < 44
#define FUSE_NOTIFY_INC_EPOCH 8
#endif
#if FUSE_KERNEL_MINOR_VERSION < 45
#define FUSE_COPY_FILE_RANGE_64 53
#define FUSE_NOTIFY_PRUNE 9
#endif

struct ufs_supp_groups {
	uint32_t nr_groups;
	uint32_t groups[];
};

#if FUSE_KERNEL_MINOR_VERSION < 39
/* Bit-for-bit the statx(2) layout. */
struct fuse_sx_time {
	int64_t tv_sec;
	uint32_t tv_nsec;
	int32_t __reserved;
};

struct fuse_statx {
	uint32_t mask;
	uint32_t blksize;
	uint64_t attributes;
	uint32_t nlink;
	uint32_t uid;
	uint32_t gid;
	uint16_t mode;
	uint16_t __spare0[1];
	uint64_t ino;
	uint64_t size;
	uint64_t blocks;
	uint64_t attributes_mask;
	struct fuse_sx_time atime;
	struct fuse_sx_time btime;
	struct fuse_sx_time ctime;
	struct fuse_sx_time mtime;
	uint32_t rdev_major;
	uint32_t rdev_minor;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint64_t __spare2[14];
};

struct fuse_statx_in {
	uint32_t getattr_flags;
	uint32_t reserved;
	uint64_t fh;
	uint32_t sx_flags;
	uint32_t sx_mask;
};

struct fuse_statx_out {
	uint64_t attr_valid;
	uint32_t attr_valid_nsec;
	uint32_t flags;
	uint64_t spare[2];
	struct fuse_statx stat;
};
#endif

#if FUSE_KERNEL_MINOR_VERSION < 40
struct fuse_backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#endif

#if FUSE_KERNEL_MINOR_VERSION < 45
struct fuse_copy_file_range_out {
	uint64_t bytes_copied;
};

struct fuse_notify_prune_out {
	uint32_t count;
	uint32_t padding;
	uint64_t spare;
};
#endif

#ifndef FUSE_DEV_IOC_BACKING_OPEN
#define FUSE_DEV_IOC_BACKING_OPEN _IOW(FUSE_DEV_IOC_MAGIC, 1, struct fuse_backing_map)
#endif
#ifndef FUSE_DEV_IOC_BACKING_CLOSE
#define FUSE_DEV_IOC_BACKING_CLOSE _IOW(FUSE_DEV_IOC_MAGIC, 2, uint32_t)
#endif
#ifndef FUSE_DEV_IOC_SYNC_INIT
#define FUSE_DEV_IOC_SYNC_INIT _IO(FUSE_DEV_IOC_MAGIC, 3)
#endif

/* fuse_init_out as of 7.46: named fields where 7.38 has unused[]. */
struct ufs_init_out {
	uint32_t major;
	uint32_t minor;
	uint32_t max_readahead;
	uint32_t flags;
	uint16_t max_background;
	uint16_t congestion_threshold;
	uint32_t max_write;
	uint32_t time_gran;
	uint16_t max_pages;
	uint16_t map_alignment;
	uint32_t flags2;
	uint32_t max_stack_depth;	/* 7.40 */
	uint16_t request_timeout;	/* 7.43, seconds */
	uint16_t unused[11];
};

/* fuse_open_out as of 7.40: padding became backing_id. */
struct ufs_open_out {
	uint64_t fh;
	uint32_t open_flags;
	int32_t backing_id;
};

/* ---- FUSE over io_uring (7.42, extended in 7.46) ---- */

#define UFS_URING_IN_OUT_HEADER_SZ 128
#define UFS_URING_OP_IN_OUT_SZ 128

/* ufs_uring_ent_in_out.flags: the payload of this entry is zero-copied. */
#define UFS_URING_ENT_ZERO_COPY (1 << 0)
/* ufs_uring_cmd_req.flags for ADD_QUEUE. */
#define UFS_URING_ZERO_COPY (1 << 0)

enum ufs_uring_cmd {
	UFS_URING_CMD_INVALID = 0,
	UFS_URING_CMD_REGISTER = 1,
	UFS_URING_CMD_COMMIT_AND_FETCH = 2,
	UFS_URING_CMD_ADD_QUEUE = 3,	/* 7.46 */
	UFS_URING_CMD_ADD_BUFPOOL = 4,	/* 7.46 */
};

struct ufs_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;	/* = fuse_in_header.unique */
	uint32_t payload_sz;
	uint32_t offset;	/* 7.46: buffer offset within the pool */
	uint64_t reserved;
};

struct ufs_uring_req_header {
	char in_out[UFS_URING_IN_OUT_HEADER_SZ];	/* fuse_in/out_header */
	char op_in[UFS_URING_OP_IN_OUT_SZ];		/* first argument */
	struct ufs_uring_ent_in_out ring_ent_in_out;
};

/* The request the kernel put in hdr. */
static inline const struct fuse_in_header *ufs_uring_req_in(const struct ufs_uring_req_header *hdr)
{
	return (const void *)hdr->in_out;
}

/* The command area of a 128-byte SQE; 40 bytes since 7.46 (24 before). */
struct ufs_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
	union {
		struct {
			uint64_t uaddr;
			uint32_t len;
			uint32_t reserved;
		} bufpool;
		uint16_t ent_zero_copy_buf_index;
	};
};

/*
 * Proposed, not upstream: the RFC puts IORING_OP_COPY_FILE_RANGE right after
 * IORING_OP_URING_CMD128 (64).  Never trusted on its number alone: see
 * copy_probe.c for the probe and the behavioural self-test.
 */
#define UFS_IORING_OP_COPY_FILE_RANGE 65
#define UFS_IORING_OP_URING_CMD 46

/* Layouts pinned to the 7.46 uapi. */
_Static_assert(sizeof(struct fuse_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct fuse_init_in) == 64, "fuse_init_in");
_Static_assert(sizeof(struct ufs_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct ufs_init_out) == sizeof(struct fuse_init_out), "fuse_init_out");
_Static_assert(offsetof(struct ufs_init_out, flags2) == 32, "init_out.flags2");
_Static_assert(offsetof(struct ufs_init_out, max_stack_depth) == 36, "init_out.max_stack_depth");
_Static_assert(offsetof(struct ufs_init_out, request_timeout) == 40, "init_out.request_timeout");
_Static_assert(sizeof(struct ufs_open_out) == sizeof(struct fuse_open_out), "fuse_open_out");
_Static_assert(offsetof(struct ufs_open_out, backing_id) == 12, "open_out.backing_id");
_Static_assert(sizeof(struct fuse_attr) == 88, "fuse_attr");
_Static_assert(sizeof(struct fuse_entry_out) == 128, "fuse_entry_out");
_Static_assert(sizeof(struct fuse_attr_out) == 104, "fuse_attr_out");
_Static_assert(sizeof(struct fuse_setattr_in) == 88, "fuse_setattr_in");
_Static_assert(sizeof(struct fuse_read_in) == 40, "fuse_read_in");
_Static_assert(sizeof(struct fuse_write_in) == 40, "fuse_write_in");
_Static_assert(sizeof(struct fuse_write_out) == 8, "fuse_write_out");
_Static_assert(sizeof(struct fuse_open_in) == 8, "fuse_open_in");
_Static_assert(sizeof(struct fuse_create_in) == 16, "fuse_create_in");
_Static_assert(sizeof(struct fuse_mknod_in) == 16, "fuse_mknod_in");
_Static_assert(sizeof(struct fuse_mkdir_in) == 8, "fuse_mkdir_in");
_Static_assert(sizeof(struct fuse_rename2_in) == 16, "fuse_rename2_in");
_Static_assert(sizeof(struct fuse_link_in) == 8, "fuse_link_in");
_Static_assert(sizeof(struct fuse_release_in) == 24, "fuse_release_in");
_Static_assert(sizeof(struct fuse_flush_in) == 24, "fuse_flush_in");
_Static_assert(sizeof(struct fuse_fsync_in) == 16, "fuse_fsync_in");
_Static_assert(sizeof(struct fuse_setxattr_in) == 16, "fuse_setxattr_in");
_Static_assert(sizeof(struct fuse_getxattr_in) == 8, "fuse_getxattr_in");
_Static_assert(sizeof(struct fuse_lk_in) == 48, "fuse_lk_in");
_Static_assert(sizeof(struct fuse_lk_out) == 24, "fuse_lk_out");
_Static_assert(sizeof(struct fuse_access_in) == 8, "fuse_access_in");
_Static_assert(sizeof(struct fuse_fallocate_in) == 32, "fuse_fallocate_in");
_Static_assert(sizeof(struct fuse_lseek_in) == 24, "fuse_lseek_in");
_Static_assert(sizeof(struct fuse_copy_file_range_in) == 56, "fuse_copy_file_range_in");
_Static_assert(sizeof(struct fuse_copy_file_range_out) == 8, "fuse_copy_file_range_out");
_Static_assert(sizeof(struct fuse_ioctl_in) == 32, "fuse_ioctl_in");
_Static_assert(sizeof(struct fuse_ioctl_out) == 16, "fuse_ioctl_out");
_Static_assert(sizeof(struct fuse_statfs_out) == 80, "fuse_statfs_out");
_Static_assert(sizeof(struct fuse_forget_in) == 8, "fuse_forget_in");
_Static_assert(sizeof(struct fuse_batch_forget_in) == 8, "fuse_batch_forget_in");
_Static_assert(sizeof(struct fuse_forget_one) == 16, "fuse_forget_one");
_Static_assert(sizeof(struct fuse_interrupt_in) == 8, "fuse_interrupt_in");
_Static_assert(sizeof(struct fuse_dirent) == 24, "fuse_dirent");
_Static_assert(sizeof(struct fuse_direntplus) == 152, "fuse_direntplus");
_Static_assert(sizeof(struct fuse_statx) == 256, "fuse_statx");
_Static_assert(sizeof(struct fuse_statx_in) == 24, "fuse_statx_in");
_Static_assert(sizeof(struct fuse_statx_out) == 288, "fuse_statx_out");
_Static_assert(sizeof(struct fuse_secctx_header) == 8, "fuse_secctx_header");
_Static_assert(sizeof(struct fuse_ext_header) == 8, "fuse_ext_header");
_Static_assert(sizeof(struct fuse_backing_map) == 16, "fuse_backing_map");
_Static_assert(sizeof(struct ufs_uring_ent_in_out) == 32, "fuse_uring_ent_in_out");
_Static_assert(offsetof(struct ufs_uring_ent_in_out, payload_sz) == 16, "ent.payload_sz");
_Static_assert(offsetof(struct ufs_uring_ent_in_out, offset) == 20, "ent.offset");
_Static_assert(sizeof(struct ufs_uring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(offsetof(struct ufs_uring_req_header, op_in) == 128, "req_header.op_in");
_Static_assert(offsetof(struct ufs_uring_req_header, ring_ent_in_out) == 256, "req_header.ent");
_Static_assert(sizeof(struct ufs_uring_cmd_req) == 40, "fuse_uring_cmd_req");
_Static_assert(offsetof(struct ufs_uring_cmd_req, qid) == 16, "cmd_req.qid");
_Static_assert(offsetof(struct ufs_uring_cmd_req, bufpool.uaddr) == 24, "cmd_req.bufpool.uaddr");
_Static_assert(offsetof(struct ufs_uring_cmd_req, bufpool.len) == 32, "cmd_req.bufpool.len");
_Static_assert(offsetof(struct ufs_uring_cmd_req, ent_zero_copy_buf_index) == 24,
	       "cmd_req.ent_zero_copy_buf_index");
/* The command area starts at byte 48 of the SQE and is 80 bytes in SQE128. */
_Static_assert(offsetof(struct io_uring_sqe, cmd) == 48, "sqe.cmd");
_Static_assert(sizeof(struct ufs_uring_cmd_req) <= 80, "cmd_req fits SQE128");

#if FUSE_KERNEL_MINOR_VERSION >= 46
/* A 7.46 system header must agree with ours. */
_Static_assert(sizeof(struct fuse_uring_cmd_req) == sizeof(struct ufs_uring_cmd_req), "7.46");
_Static_assert(sizeof(struct fuse_uring_req_header) == sizeof(struct ufs_uring_req_header), "7.46");
_Static_assert(FUSE_URING_ZERO_COPY == UFS_URING_ZERO_COPY, "7.46");
_Static_assert(offsetof(struct fuse_uring_cmd_req, ent_zero_copy_buf_index) ==
	       offsetof(struct ufs_uring_cmd_req, ent_zero_copy_buf_index), "7.46");
_Static_assert(offsetof(struct fuse_uring_ent_in_out, offset) ==
	       offsetof(struct ufs_uring_ent_in_out, offset), "7.46");
_Static_assert(offsetof(struct fuse_init_out, request_timeout) ==
	       offsetof(struct ufs_init_out, request_timeout), "7.46");
_Static_assert(offsetof(struct fuse_open_out, backing_id) ==
	       offsetof(struct ufs_open_out, backing_id), "7.46");
_Static_assert(sizeof(struct fuse_supp_groups) == sizeof(struct ufs_supp_groups), "7.46");
_Static_assert(FUSE_EXT_GROUPS == UFS_FUSE_EXT_GROUPS, "7.46");
_Static_assert((int)FUSE_IO_URING_CMD_ADD_BUFPOOL == (int)UFS_URING_CMD_ADD_BUFPOOL, "7.46");
_Static_assert(FUSE_URING_ENT_ZERO_COPY == UFS_URING_ENT_ZERO_COPY, "7.46");
#endif

#endif /* UFS_FUSE_ABI_H */
