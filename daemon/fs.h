/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The passthrough file system: SOURCE, the inode store (inode.h), open
 * files and the operation handlers.
 *
 * Confinement rules, kept by every handler:
 *  - a name is resolved only relative to its parent's descriptor, one
 *    component at a time, never by building a path string;
 *  - no symlink is ever followed by the daemon (O_NOFOLLOW,
 *    AT_SYMLINK_NOFOLLOW; the kernel resolves symlinks on the client side);
 *  - an inode is reopened for I/O only through its own descriptor
 *    (/proc/self/fd/N or a file handle), and only if it is a regular file or
 *    a directory: device nodes and FIFOs are never opened;
 *  - a name-based operation under a parent that has been moved out of SOURCE
 *    fails with ENOENT (ufs_inode_check_beneath, confine.c).
 */
#ifndef UFS_FS_H
#define UFS_FS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "budget.h"
#include "control_opens.h"
#include "coherence.h"
#include "config.h"
#include "confine.h"
#include "copy.h"
#include "file_table.h"
#include "inode.h"
#include "inode_lookup.h"
#include "inode_prune.h"
#include "inode_revive.h"
#include "interrupt.h"
#include "passthrough.h"
#include "record.h"
#include "req.h"
#include "wait.h"

struct ufs_conn;
struct ufs_lock_owner;
struct ufs_store;

struct ufs_fs {
	const struct ufs_config *cfg;
	const struct ufs_conn *conn;
	struct ufs_confine confine;	/* SOURCE, /proc/self/fd: set at init (confine.h) */
	bool running_as_root;
	bool noatime, nodiratime;	/* the mount's options: backing opens take O_NOATIME */
	bool suid;			/* the mount honours set-id bits at exec */
	struct ufs_inode_store inodes;	/* the inode store: its own locks (inode.h) */
	/* the watcher that keeps the kernel's caches coherent (coherence.h) */
	struct ufs_coherence coherence;
	struct ufs_inode_prune prune;	/* its bound, inode_limit (inode_prune.h) */
	/*
	 * The hand-over record (record.h), or one that keeps nothing: file
	 * records under files.file_lock (the store writes node records).
	 */
	struct ufs_record *record;

	struct ufs_file_table files;	/* the open-file table (file_table.h), its own lock */

	struct ufs_inode *control;	/* the stats control file, or NULL */
	struct timespec control_time;	/* its times: when the file system started */
	struct ufs_control_opens control_opens;	/* its opens by ordinary users, own lock */
	/*
	 * Requests that reply from elsewhere, and the INTERRUPTs that find
	 * them: long waits on helper threads and copies; each locks itself.
	 */
	struct ufs_interrupts interrupts;
	struct ufs_waits waits;
	struct ufs_copies copies;
	struct ufs_budget budget;	/* descriptors charged per user */
	/*
	 * POSIX lock owners' descriptions open (fs_lock.c), atomic: a
	 * take-over passes them on, and refuses a successor that cannot take
	 * them while there are any (handover_socket.c).
	 */
	uint64_t lock_owners;
	bool zero_copy;			/* opens ask for FOPEN_IO_URING_ZERO_COPY */
	struct ufs_passthrough pt;	/* kernel passthrough (passthrough.h) */
	/*
	 * What the file system asks of the daemon above it (daemon_start.c sets
	 * them): the control file's stats snapshot (listing every request in
	 * flight if all, else only uid's), telling the kernel
	 * that its cached attributes of nodeid are stale, after a change the
	 * reply does not carry (FUSE_NOTIFY_INVAL_INODE), and waiting for
	 * requests the kernel queued ahead of the one being served.
	 */
	char *(*control_snapshot)(void *arg, bool all, uid_t uid, size_t *len);
	void (*attr_stale)(void *arg, uint64_t nodeid);
	/*
	 * Wait until no other worker holds a RELEASE of nodeid that it took
	 * before, or enough(enough_arg), up to timeout_ms; false if the time
	 * ran out (worker.h: ufs_workers_await).
	 */
	bool (*await_release)(void *arg, uint64_t nodeid, bool (*enough)(void *),
			      void *enough_arg, unsigned int timeout_ms);
	void *upcall_arg;
};


/* Handlers, one per opcode, in fs_*.c.  Return >= 0: reply payload length in req->out. */
#define UFS_OP_HANDLERS(X)                                                                        \
	X(lookup) X(forget) X(batch_forget) X(getattr) X(setattr) X(readlink) X(symlink)          \
	X(mknod) X(mkdir) X(unlink) X(rmdir) X(rename) X(rename2) X(link) X(open) X(create)      \
	X(tmpfile) X(read) X(write) X(flush) X(release) X(fsync) X(opendir) X(readdir)            \
	X(readdirplus) X(releasedir) X(fsyncdir) X(statfs) X(setxattr) X(getxattr) X(listxattr)   \
	X(removexattr) X(access) X(getlk) X(setlk) X(setlkw) X(fallocate) X(lseek)               \
	X(copy_file_range) X(copy_file_range_64) X(statx) X(syncfs) X(ioctl) X(interrupt)         \
	X(destroy) X(poll) X(bmap)

#define UFS_DECLARE_HANDLER(op) ssize_t ufs_op_##op(struct ufs_fs *fs, struct ufs_req *req);
UFS_OP_HANDLERS(UFS_DECLARE_HANDLER)
#undef UFS_DECLARE_HANDLER

#endif /* UFS_FS_H */
