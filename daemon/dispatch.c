// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Protocol dispatch: decode, find the inode, run the handler, reply.  The
 * same path serves every transport.
 */
#include <errno.h>
#include <string.h>

#include "clock.h"
#include "caller.h"
#include "creds.h"
#include "decode.h"
#include "dispatch.h"
#include "fs.h"
#include "inflight.h"
#include "log.h"
#include "worker.h"

typedef ssize_t (*ufs_handler_fn)(struct ufs_fs *fs, struct ufs_req *req);

#define H(code, op) [code] = ufs_op_##op

static const ufs_handler_fn handlers[] = {
	H(FUSE_LOOKUP, lookup),
	H(FUSE_FORGET, forget),
	H(FUSE_GETATTR, getattr),
	H(FUSE_SETATTR, setattr),
	H(FUSE_READLINK, readlink),
	H(FUSE_SYMLINK, symlink),
	H(FUSE_MKNOD, mknod),
	H(FUSE_MKDIR, mkdir),
	H(FUSE_UNLINK, unlink),
	H(FUSE_RMDIR, rmdir),
	H(FUSE_RENAME, rename),
	H(FUSE_LINK, link),
	H(FUSE_OPEN, open),
	H(FUSE_READ, read),
	H(FUSE_WRITE, write),
	H(FUSE_STATFS, statfs),
	H(FUSE_RELEASE, release),
	H(FUSE_FSYNC, fsync),
	H(FUSE_SETXATTR, setxattr),
	H(FUSE_GETXATTR, getxattr),
	H(FUSE_LISTXATTR, listxattr),
	H(FUSE_REMOVEXATTR, removexattr),
	H(FUSE_FLUSH, flush),
	H(FUSE_OPENDIR, opendir),
	H(FUSE_READDIR, readdir),
	H(FUSE_RELEASEDIR, releasedir),
	H(FUSE_FSYNCDIR, fsyncdir),
	H(FUSE_GETLK, getlk),
	H(FUSE_SETLK, setlk),
	H(FUSE_SETLKW, setlkw),
	H(FUSE_ACCESS, access),
	H(FUSE_CREATE, create),
	H(FUSE_INTERRUPT, interrupt),
	H(FUSE_BMAP, bmap),
	H(FUSE_DESTROY, destroy),
	H(FUSE_IOCTL, ioctl),
	H(FUSE_POLL, poll),
	H(FUSE_BATCH_FORGET, batch_forget),
	H(FUSE_FALLOCATE, fallocate),
	H(FUSE_READDIRPLUS, readdirplus),
	H(FUSE_RENAME2, rename2),
	H(FUSE_LSEEK, lseek),
	H(FUSE_COPY_FILE_RANGE, copy_file_range),
	H(FUSE_SYNCFS, syncfs),
	H(FUSE_TMPFILE, tmpfile),
	H(FUSE_STATX, statx),
	H(FUSE_COPY_FILE_RANGE_64, copy_file_range_64),
};

#define HANDLER_COUNT (sizeof(handlers) / sizeof(handlers[0]))

/*
 * Calls that can take space (a directory block, an xattr block, a quota
 * transfer to a new owner) without creating an inode: the caller's limits
 * around the whole handler (ident.c).  Data writes take them in their I/O
 * engine; creating calls run as the caller (creds.c).  A SETATTR that only
 * sets times rewrites the inode in place; anything else it may carry
 * counts (a chmod: ext4 copies an xattr block that files share before it
 * changes the ACL in it).
 */
#define SETATTR_TIMES_ONLY                                                                        \
	(FATTR_ATIME | FATTR_MTIME | FATTR_ATIME_NOW | FATTR_MTIME_NOW | FATTR_CTIME | FATTR_FH | \
	 FATTR_LOCKOWNER)

static bool charged_call(const struct ufs_req *req)
{
	const struct fuse_setattr_in *setattr = req->args.op;

	switch (req->in->opcode) {
	case FUSE_LINK:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_SETXATTR:
	case FUSE_IOCTL:
		return true;
	case FUSE_SETATTR:
		return setattr->valid & ~SETATTR_TIMES_ONLY;
	default:
		return false;
	}
}

static ssize_t run_handler(struct ufs_fs *fs, struct ufs_req *req)
{
	struct ufs_ident_saved saved;
	struct ufs_ident who;
	ssize_t res;

	if (!charged_call(req))
		return handlers[req->in->opcode](fs, req);
	ufs_ident_of(fs, req, NULL, &who);
	res = ufs_ident_enter(&who, 0, &saved);
	if (res)
		return res;
	res = handlers[req->in->opcode](fs, req);
	ufs_ident_leave(&saved);
	return res;
}

static struct ufs_stats *req_stats(struct ufs_req *req)
{
	return req->worker ? &req->worker->stats : NULL;
}

/*
 * Finish a request: drop its inode reference and hand the result to the
 * transport.  res >= 0 is the reply payload length in req->out, res < 0 an
 * errno.  Callable from any thread for a queued request.
 */
void ufs_req_done(struct ufs_req *req, ssize_t res)
{
	struct ufs_stats *st = req_stats(req);

	/* Off the in-flight list before the caller can see the reply. */
	ufs_inflight_end(req);
	if (req->inode) {
		ufs_inode_put(&req->fs->inodes, req->inode);
		req->inode = NULL;
	}
	/* The kernel refuses errors outside -511..-1; never send one. */
	if (res < 0 && res <= -512) {
		ufs_log_once(UFS_LOG_ERR, "handler for %s returned %zd: replying EIO",
			     ufs_opcode_name(req->in->opcode), res);
		res = -EIO;
	}
	if (res > (ssize_t)req->out_cap) {
		ufs_log_once(UFS_LOG_ERR, "handler for %s overran its reply buffer",
			     ufs_opcode_name(req->in->opcode));
		res = -EIO;
	}
	if (res < 0 && st)
		ufs_stat_add(&st->errors, 1);
	if (res < 0)
		req->xops->reply(req, (int)res, 0);
	else
		req->xops->reply(req, 0, res);
}

void ufs_req_replied(struct ufs_req *req)
{
	struct ufs_stats *st = req_stats(req);
	uint64_t arrived = req->arrived_ns;

	if (!arrived)
		return;
	req->arrived_ns = 0;
	if (st)
		ufs_lat_add(st->lat.request, st->lat.request_ns, req->in->opcode,
			    ufs_now_ns() - arrived);
}

/* The handler, timed: the backing histogram (counters.h). */
static ssize_t run_timed(struct ufs_fs *fs, struct ufs_req *req)
{
	struct ufs_stats *st = req_stats(req);
	uint32_t opcode = req->in->opcode;
	uint64_t start = ufs_now_ns();
	ssize_t res;

	res = run_handler(fs, req);
	/* A queued request may be done and gone already: only the locals are safe. */
	if (st)
		ufs_lat_add(st->lat.backing, st->lat.backing_ns, opcode, ufs_now_ns() - start);
	return res;
}

static void count_request(struct ufs_req *req)
{
	struct ufs_stats *st = req_stats(req);
	uint32_t opcode = req->in->opcode;

	if (!st)
		return;
	ufs_stat_add(&st->requests[opcode < UFS_OPCODE_MAX ? opcode : 0], 1);
}

/*
 * The kernel's export operations look up "." (fuse_get_dentry) and ".."
 * (fuse_get_parent) of node ids it may have sent FORGET for: only these
 * may bring a forgotten node id back.
 */
static bool is_export_lookup(const struct ufs_req *req)
{
	const char *name = req->args.name;

	return req->in->opcode == FUSE_LOOKUP && name[0] == '.' &&
	       (!name[1] || (name[1] == '.' && !name[2]));
}

/*
 * Whose share a request draws on.  Once the connection allows idmapped
 * mounts (FUSE_ALLOW_IDMAP) the kernel sends no ids in a request that
 * creates nothing: the calling thread's own are read for those that draw
 * on a share.  An io-wq worker acting for a process that dropped root
 * shows root's; a key misplaced, never a right (creds.c uses only the
 * kernel's ids).
 */
static void caller_share(struct ufs_req *req)
{
	req->caller_uid = req->in->uid;
	if (req->in->uid == FUSE_INVALID_UIDGID &&
	    (ufs_op_desc(req->in->opcode)->flags & UFS_OPF_CALLER) &&
	    ufs_caller_own_uid(req, &req->caller_uid))
		req->caller_uid = FUSE_INVALID_UIDGID;
}

void ufs_dispatch(struct ufs_fs *fs, struct ufs_req *req, const struct ufs_msg *msg)
{
	const char *why;
	ssize_t res;
	int ret;

	req->arrived_ns = ufs_now_ns();
	req->inflight = NULL;
	req->fs = fs;
	req->complete = ufs_req_done;
	req->inode = NULL;
	req->copy = NULL;
	ret = ufs_decode(fs->conn, msg, req, &why);
	count_request(req);
	if (ret) {
		if (ret != -ENOSYS) {
			if (req_stats(req))
				ufs_stat_add(&req_stats(req)->bad_requests, 1);
			ufs_log_once(UFS_LOG_WARN, "malformed %s request (unique=%llu, len=%u): %s",
				     ufs_opcode_name(msg->in->opcode),
				     (unsigned long long)msg->in->unique, msg->in->len, why);
		} else {
			ufs_dbg("unsupported opcode %u: ENOSYS", msg->in->opcode);
		}
		ufs_req_done(req, ret);
		return;
	}
	caller_share(req);
	if (req->worker)
		ufs_inflight_begin(&req->worker->inflight, req);
	if (req->in->opcode >= HANDLER_COUNT || !handlers[req->in->opcode]) {
		ufs_req_done(req, -ENOSYS);
		return;
	}
	if (ufs_op_desc(req->in->opcode)->flags & UFS_OPF_INODE) {
		req->inode = ufs_inode_get(&fs->inodes, req->in->nodeid);
		if (!req->inode && is_export_lookup(req))
			req->inode = ufs_inode_revive(&fs->inodes, req->in->nodeid);
		if (!req->inode) {
			ufs_log_once(UFS_LOG_WARN, "%s for nodeid=%llu, unknown or unlinked: ESTALE",
				     ufs_opcode_name(req->in->opcode),
				     (unsigned long long)req->in->nodeid);
			ufs_req_done(req, -ESTALE);
			return;
		}
	}
	res = run_timed(fs, req);
	if (res != -UFS_EQUEUED)
		ufs_req_done(req, res);
}
