/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One FUSE request on its way through the daemon.
 *
 * A transport (dev.c for /dev/fuse, uring.c for io_uring) owns the memory a
 * request arrives in and the buffer its reply is built in, and embeds a
 * struct ufs_req in its own slot.  The dispatcher decodes the request into
 * req->args, the file system handler runs and returns a result, and the
 * transport sends it.  Nothing above the transport knows which one delivered
 * the request.
 */
#ifndef UFS_REQ_H
#define UFS_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fuse_abi.h"
#include "ident.h"

/*
 * Handler result meaning "the reply comes later" (an I/O on the worker's
 * ring, a lock wait on a helper thread).  The kernel's -EIOCBQUEUED plays the
 * same role; no system call returns it to user space.
 */
#define UFS_EQUEUED 529

struct ufs_req;
struct ufs_worker;
struct ufs_fs;
struct ufs_inode;
struct ufs_copy_job;
struct ufs_inflight_slot;

/* Decoded request arguments; every pointer is inside the request, every length checked. */
struct ufs_args {
	const void *op;			/* fixed op struct (desc->op_size bytes), or NULL */
	const char *name;		/* NUL-terminated, length-checked */
	const char *name2;		/* second name: RENAME's new name, SYMLINK's target, xattr name */
	const uint8_t *data;		/* WRITE data, SETXATTR value, IOCTL input */
	size_t data_len;
	const struct fuse_forget_one *forgets;	/* BATCH_FORGET */
	uint32_t forget_count;
	const uint8_t *groups;		/* FUSE_EXT_GROUPS: u32 gids, maybe unaligned */
	uint32_t group_count;
};

/*
 * The asynchronous data operation of a request: READ, WRITE, FSYNC,
 * FALLOCATE, COPY_FILE_RANGE.  The worker's I/O engine runs it (a system call
 * for /dev/fuse, an SQE on the worker's ring for io_uring) and calls done.
 */
enum ufs_io_op {
	UFS_IO_READ,
	UFS_IO_WRITE,
	UFS_IO_FSYNC,
	UFS_IO_FDATASYNC,
	UFS_IO_FALLOCATE,
	UFS_IO_COPY,
};

struct ufs_io {
	enum ufs_io_op op;
	int fd;
	uint64_t off;
	void *buf;
	size_t len;
	size_t done_bytes;		/* progress across short transfers */
	int mode;			/* FALLOCATE mode */
	bool bounce;			/* O_DIRECT backing: data must pass through memory */
	int fd_in;			/* COPY source */
	uint64_t off_in;
	struct ufs_ident who;		/* whose limits it meets (ident.h) */
	void (*done)(struct ufs_req *req, ssize_t res);
	/* With done = a closer (fs_data.c): descriptors opened for this I/O, -1: none. */
	int own_fd[2];
	void (*then)(struct ufs_req *req, ssize_t res);
};

/* How a transport sends the reply of one of its requests. */
struct ufs_transport_ops {
	const char *name;
	/*
	 * Send out.error = error and len bytes of reply payload from
	 * req->out.  May be called from any thread for a queued request.
	 */
	void (*reply)(struct ufs_req *req, int error, size_t len);
	/* Run an I/O; done may be called before this returns. */
	void (*io_submit)(struct ufs_req *req);
	/*
	 * Make the I/O in flight (a copy's chunk) end soon, from any thread,
	 * while the caller keeps the request alive.  Optional: a transport
	 * without it runs no copy I/O itself (copy.c).
	 */
	void (*io_cancel)(struct ufs_req *req);
	/*
	 * The request will wait for a long time (a blocking lock): returns 0
	 * if the transport can still take other requests meanwhile, else an
	 * error to answer it with.  Optional; the reply ends the hold.
	 */
	int (*hold)(struct ufs_req *req);
};

struct ufs_req {
	const struct ufs_transport_ops *xops;
	/*
	 * Ends the request: releases what it holds and replies res (a reply
	 * length, or -errno) through xops.  Set by the dispatcher, which owns
	 * a request's end; a handler that returned -UFS_EQUEUED calls it
	 * through ufs_req_complete(), from any thread, exactly once.
	 */
	void (*complete)(struct ufs_req *req, ssize_t res);
	struct ufs_worker *worker;	/* back pointer: the worker serving it */
	/*
	 * When the dispatcher got it (clock.h: CLOCK_MONOTONIC ns); 0 once
	 * its reply went (dispatch.c: ufs_req_replied) or before dispatch.
	 */
	uint64_t arrived_ns;
	struct ufs_fs *fs;
	const struct fuse_in_header *in;
	/* its slot in the worker's in-flight table (inflight.h), or NULL: untracked */
	struct ufs_inflight_slot *inflight;
	struct ufs_inode *inode;	/* in->nodeid, referenced while the request lives */
	/*
	 * Whose share of the budgets (budget.h) it draws on: in->uid, or where
	 * the kernel sent FUSE_INVALID_UIDGID (idmap) in a request that draws
	 * (UFS_OPF_CALLER) the calling thread's own fsuid (caller.h), if it can
	 * be read.  Set by the dispatcher.  A key, never a right.
	 */
	uint32_t caller_uid;
	bool noreply;			/* FORGET and friends: the kernel expects no answer */
	/*
	 * A predecessor may have carried it out already and died before its
	 * reply (FUSE_UNIQUE_RESEND, or a ring entry it held): an outcome that
	 * says "already done" (EEXIST from a create, ENOENT from a removal) is
	 * its success.
	 */
	bool replay;
	struct ufs_args args;
	/*
	 * Reply payload buffer.  It may be the same memory as the request's
	 * payload (io_uring entries): read the arguments before writing here.
	 */
	void *out;
	size_t out_cap;
	bool direct_io_aligned;		/* out is page aligned for O_DIRECT */
	bool zero_copy;			/* READ/WRITE data is in the client's pages (ring_io.c) */
	struct ufs_io io;
	struct ufs_copy_job *copy;	/* a copy_file_range in flight (copy.c) */
	char names[2][256];		/* copies of the name arguments */
	char xattr_name[256];
};

static inline void ufs_req_complete(struct ufs_req *req, ssize_t res)
{
	req->complete(req, res);
}

#endif /* UFS_REQ_H */
