/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The passthrough file system: inodes, open files and the operation handlers.
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
 *    fails with ENOENT (ufs_inode_check_beneath).
 */
#ifndef UFS_FS_H
#define UFS_FS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "budget.h"
#include "config.h"
#include "copy.h"
#include "file_table.h"
#include "interrupt.h"
#include "passthrough.h"
#include "record.h"
#include "req.h"
#include "wait.h"

struct ufs_conn;
struct ufs_lock_owner;
struct ufs_store;

struct ufs_inode {
	uint64_t nodeid;		/* our id, never reused */
	dev_t dev;			/* backing identity */
	ino_t ino;
	mode_t type;			/* S_IFMT bits */
	struct file_handle *handle;	/* reopens fd (inode_handles), or NULL */
	int mount_fd;			/* the handle's file system, for open_by_handle_at */
	int mount_id;			/* name_to_handle_at's, for the hand-over record */
	/* fields below are protected by fs->inode_lock */
	int fd;				/* O_PATH; -1 while evicted (handle only) */
	uint64_t nlookup;		/* references the kernel holds */
	uint64_t parent;		/* where a name last led to it, 0: unknown (export.c) */
	uint32_t refs;			/* in-flight requests and open files; pins fd */
	struct ufs_inode *next_by_id;	/* hash chains */
	struct ufs_inode *next_by_key;
	bool keyed;			/* in the (dev, ino) index: the file still has this key */
	bool drop_fd;			/* a name was removed: close fd once unpinned */
	bool unverified;		/* restored from a record: not yet proven inside SOURCE */
	uint32_t record_slot;		/* its hand-over record + 1, 0: none (record.h) */
	struct ufs_inode *lru_prev;	/* unpinned handle inodes with an fd, oldest first */
	struct ufs_inode *lru_next;
	/* fields below are protected by lock */
	pthread_mutex_t lock;
	struct ufs_lock_owner *lock_owners;
	enum ufs_io_mode io_mode;	/* the data path of its opens (passthrough.c) */
	uint32_t io_opens;		/* opens counted in io_mode */
	/*
	 * Writable passthrough opens: while there are any, a mapping writes
	 * the backing file behind the kernel's cached attributes, so they
	 * are replied uncacheable (read atomically by the attribute replies).
	 */
	uint32_t pt_writers;
	int backing_id;			/* UFS_IO_PASSTHROUGH: the kernel's id */
	/* the identity the kernel's passthrough writes have (registered as) */
	struct ufs_ident backing_who;
	bool backing_who_known;		/* false: restored from a hand-over */
	enum ufs_backing_fs backing_fs;	/* set once, atomically, at the first open */
	struct ufs_file *opens;		/* open files pinning fd (ufs_file_pin) */
	struct ufs_file *pin_payer;	/* the one of them charged for fd, or NULL */
	char control;			/* 1: the stats control file (no backing) */
};

/*
 * Node ids the kernel forgot, kept for its file handles (export.c).
 * Protected by fs->inode_lock.
 */
struct ufs_export;
struct ufs_exports {
	struct ufs_record *record;	/* where records are kept for a successor */
	struct ufs_export **by_id, **by_key;
	size_t buckets, count;
	unsigned int limit;		/* export_inodes; 0 keeps none */
	struct ufs_export *oldest;	/* a list, oldest first ... */
	struct ufs_export **newest_link;	/* ... and where the next one is linked */
	uint64_t revived, stale, expired;	/* LOOKUP "." served, gone, dropped by limit */
};

/* A record copied out to reopen its file without the lock. */
struct ufs_export_copy {
	struct file_handle *handle;	/* malloc'ed */
	dev_t dev;
	ino_t ino;
	mode_t type;
	int mount_fd;
	int mount_id;
	uint64_t parent;		/* a non-directory is looked for there */
};

struct ufs_fs {
	const struct ufs_config *cfg;
	const struct ufs_conn *conn;
	int root_fd;			/* O_PATH, SOURCE */
	int proc_fd;			/* /proc/self/fd */
	char root_path[PATH_MAX];	/* as the kernel spells it, for check_beneath */
	size_t root_path_len;
	struct ufs_confine_memo *confine_memo;	/* or NULL: deep checks walk */
	bool running_as_root;
	bool noatime, nodiratime;	/* the mount's options: backing opens take O_NOATIME */
	bool suid;			/* the mount honours set-id bits at exec */
	struct ufs_inode *root;

	pthread_mutex_t inode_lock;	/* take before any inode->lock */
	struct ufs_inode **by_id, **by_key;
	size_t buckets, inode_count;
	uint64_t next_nodeid;
	/*
	 * Inode descriptors (inode_handles): an inode that has a file handle
	 * keeps its O_PATH descriptor only while in use or in a bounded LRU.
	 * Protected by inode_lock.
	 */
	bool handles;			/* name_to_handle_at/open_by_handle_at usable */
	size_t fds_open;		/* handle inodes with an open fd */
	struct ufs_inode *lru_head, *lru_tail;
	struct ufs_mount_fd {
		int mount_id;
		int fd;
	} mount_fds[64];
	unsigned int nmount_fds;
	struct ufs_exports exports;	/* inode_lock */
	struct ufs_store *store;	/* the export store (store.h), NULL: none; inode_lock */
	/*
	 * The hand-over record (record.h), or one that keeps nothing: node
	 * records under inode_lock, file records under files.file_lock.
	 */
	struct ufs_record *record;

	struct ufs_file_table files;	/* the open-file table (file_table.h), its own lock */

	struct ufs_inode *control;	/* the stats control file, or NULL */
	struct timespec control_time;	/* its times: when the file system started */
	/*
	 * Requests that reply from elsewhere, and the INTERRUPTs that find
	 * them: long waits on helper threads and copies; each locks itself.
	 */
	struct ufs_interrupts interrupts;
	struct ufs_waits waits;
	struct ufs_copies copies;
	struct ufs_budget budget;	/* descriptors charged per user */
	bool zero_copy;			/* opens ask for FOPEN_IO_URING_ZERO_COPY */
	struct ufs_passthrough pt;	/* kernel passthrough (passthrough.h) */
	/*
	 * What the file system asks of the daemon above it (daemon.c sets
	 * them): the control file's stats snapshot, and telling the kernel
	 * that its cached attributes of nodeid are stale, after a change the
	 * reply does not carry (FUSE_NOTIFY_INVAL_INODE).
	 */
	char *(*control_snapshot)(void *arg, size_t *len);
	/* Set by ufs_fs_init for the inode store: free what handlers attached. */
	void (*inode_release)(struct ufs_inode *inode);
	void (*attr_stale)(void *arg, uint64_t nodeid);
	void *upcall_arg;
};


/* inode.c */
int ufs_inode_table_init(struct ufs_fs *fs);
int ufs_inode_handles_init(struct ufs_fs *fs);
void ufs_inode_table_destroy(struct ufs_fs *fs);
int ufs_inode_root_create(struct ufs_fs *fs, int fd, const struct stat *st);
struct ufs_inode *ufs_inode_get(struct ufs_fs *fs, uint64_t nodeid);
void ufs_inode_put(struct ufs_fs *fs, struct ufs_inode *inode);
int ufs_inode_find_or_insert(struct ufs_fs *fs, int fd, const struct stat *st,
			     uint64_t parent, struct ufs_inode **out);
void ufs_inode_moved(struct ufs_fs *fs, dev_t dev, ino_t ino, uint64_t parent);
void ufs_inode_forget(struct ufs_fs *fs, uint64_t nodeid, uint64_t nlookup);
void ufs_inode_unlinked(struct ufs_fs *fs, dev_t dev, ino_t ino, nlink_t nlink);
size_t ufs_inode_count(struct ufs_fs *fs);

/* confine.c: 0 if inside SOURCE, else -ENOENT */
int ufs_check_beneath_fd(struct ufs_fs *fs, int fd);
int ufs_inode_check_beneath(struct ufs_fs *fs, struct ufs_inode *inode);
int ufs_check_in_dir(int dir_fd, dev_t dev, ino_t ino);
int ufs_inode_dir_beneath(struct ufs_fs *fs, struct ufs_inode *inode);

/* confine_memo.c: deep directories remembered inside SOURCE */
void ufs_confine_memo_init(struct ufs_fs *fs);
void ufs_confine_memo_destroy(struct ufs_fs *fs);
int ufs_confine_memo_check(struct ufs_fs *fs, int fd);

struct ufs_inode *ufs_inode_revive(struct ufs_fs *fs, uint64_t nodeid);
int ufs_inode_restore(struct ufs_fs *fs, uint32_t slot, const struct ufs_record_node *n);
void ufs_inode_restore_done(struct ufs_fs *fs, uint64_t next_nodeid);
void ufs_inode_add_lookup(struct ufs_fs *fs, struct ufs_inode *inode);
void ufs_inode_export_stats(struct ufs_fs *fs, struct ufs_exports *out);

/* The inode store's and export.c's hash buckets; buckets is a power of two. */
static inline size_t ufs_hash_nodeid(uint64_t nodeid, size_t buckets)
{
	return (nodeid * 0x9e3779b97f4a7c15ULL) >> 17 & (buckets - 1);
}

static inline size_t ufs_hash_key(dev_t dev, ino_t ino, size_t buckets)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev * 0xc2b2ae3d27d4eb4fULL;

	return (h ^ h >> 29) & (buckets - 1);
}

/* export.c, all called with inode_lock */
int ufs_exports_init(struct ufs_exports *ex, unsigned int limit);
void ufs_exports_destroy(struct ufs_exports *ex);
void ufs_export_keep_locked(struct ufs_exports *ex, const struct ufs_inode *inode);
uint64_t ufs_export_reclaim_locked(struct ufs_exports *ex, dev_t dev, ino_t ino,
				   const struct file_handle *handle, uint32_t *record_slot);
bool ufs_export_has_locked(const struct ufs_exports *ex, uint64_t nodeid);
int ufs_export_copy_locked(const struct ufs_exports *ex, uint64_t nodeid,
			   struct ufs_export_copy *out);
bool ufs_export_drop_locked(struct ufs_exports *ex, uint64_t nodeid, bool stale,
			    uint32_t *record_slot);

/* inode.c */
void ufs_inode_ref(struct ufs_fs *fs, struct ufs_inode *inode);

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
