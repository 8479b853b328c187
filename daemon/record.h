/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hand-over record: what a successor needs to serve a live connection
 * without INIT, kept in a memory file that outlives the daemon (handed to
 * the successor, or held by systemd's file descriptor store).
 *
 * The daemon writes it as it goes, in an order that a reader can check
 * after a kill -9 at any instruction: a record's fields are written before
 * the word that makes it valid (its node id), and that word is cleared
 * before the record is reused.  Lookup counts are single 64-bit stores,
 * raised before the reply that hands the kernel a lookup and lowered after
 * the FORGET that takes it away, so the record never counts fewer lookups
 * than the kernel holds.
 *
 * The file is sparse: only the pages of records in use take memory.
 */
#ifndef UFS_RECORD_H
#define UFS_RECORD_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UFS_RECORD_MAGIC 0x31434552534655ULL	/* "UFSREC1" */
#define UFS_RECORD_VERSION 2
#define UFS_RECORD_HANDLE_MAX 128		/* MAX_HANDLE_SZ */
#define UFS_RECORD_NODES (16u << 20)		/* node ids the kernel may hold */
#define UFS_RECORD_FILES (16u << 20)		/* open files: the fh table's bound */
#define UFS_RECORD_OPTIONS 4096

/* What the first daemon negotiated, and counters every successor carries on. */
struct ufs_record_header {
	uint64_t magic;
	uint32_t version;
	uint32_t header_size;
	uint64_t nodes_off, files_off, size;	/* byte offsets of the record arrays, file size */
	uint32_t nodes_cap, files_cap;
	/* written once, before the record is handed to anyone */
	char source[PATH_MAX];
	char mountpoint[PATH_MAX];		/* its real path */
	char options[UFS_RECORD_OPTIONS];	/* the options the kernel holds the mount to */
	char settings[UFS_RECORD_OPTIONS];	/* the -o given to the daemon serving now */
	uint32_t init_in_len, init_out_len;
	uint8_t init_in[128];			/* fuse_init_in as the kernel sent it */
	uint8_t init_out[256];			/* our reply */
	uint32_t conn_id;			/* /sys/fs/fuse/connections/<id> */
	uint32_t pad;
	/* live; single stores */
	uint64_t next_nodeid;			/* no node id at or above it was ever issued */
	uint32_t nodes_hwm, files_hwm;		/* no record at or above is in use */
	uint64_t restarts;			/* successors that took over */
	uint64_t resent;			/* requests a successor served again */
	uint32_t owner_pid;			/* the daemon serving now */
	uint32_t incomplete;			/* a record could not be written: no take-over */
};

/* Node flags */
#define UFS_RECORD_NODE_EXPORTED 1u	/* forgotten, kept for its file handle (export.c) */

/* A node id the kernel holds, or one it forgot that a file handle may name. */
struct ufs_record_node {
	uint64_t nodeid;		/* 0: free; written last, cleared first */
	uint64_t nlookup;		/* the kernel's lookups, never fewer */
	uint64_t dev, ino;
	uint64_t parent;		/* the directory to find it in again, 0: unknown */
	uint32_t type;			/* S_IFMT bits */
	uint32_t flags;
	int32_t mount_id;		/* name_to_handle_at's */
	int32_t handle_type;
	uint32_t handle_bytes;
	uint32_t pad;
	uint8_t handle[UFS_RECORD_HANDLE_MAX];
};

enum ufs_record_file_kind {
	UFS_RECORD_FILE = 1,
	UFS_RECORD_DIR = 2,
	UFS_RECORD_CONTROL = 3,
};

/* An open file, at its fh's index in the fh table. */
struct ufs_record_file {
	uint64_t nodeid;		/* 0: free; written last, cleared first */
	uint32_t gen;			/* the fh's generation: fh = gen << 32 | index + 1 */
	int32_t flags;			/* the backing open's flags */
	int32_t backing_id;		/* kernel passthrough's id, 0: none */
	uint8_t kind;			/* enum ufs_record_file_kind */
	uint8_t io_mode;		/* enum ufs_io_mode */
	uint16_t pad;
	uint32_t charged_uid;		/* the opener's uid + 1 (budget.h), 0: unknown */
	uint32_t reserved;
};

struct ufs_record {
	int fd;				/* the memory file, -1: none kept */
	struct ufs_record_header *hdr;
	struct ufs_record_node *nodes;
	struct ufs_record_file *files;
	size_t map_len;
	/* free node slots below nodes_hwm; protected by the inode store's lock */
	uint32_t *node_free;
	uint32_t node_free_n, node_free_cap;
};

/* Every writer below takes NULL, or a record that keeps nothing, and does nothing. */
static inline bool ufs_record_kept(const struct ufs_record *r)
{
	return r && r->hdr;
}

/*
 * A fresh record for SOURCE at MOUNTPOINT, mounted with options (for the
 * kernel) by a daemon given settings (-o).
 */
int ufs_record_create(struct ufs_record *r, const char *source, const char *mountpoint,
		      const char *options, const char *settings);
/* The settings (-o) of the daemon serving now, for a --take-over without any. */
void ufs_record_set_settings(struct ufs_record *r, const char *settings);
/*
 * Take over a record from fd (which it keeps): checked, and the free slots
 * found.  Returns 0, or -EINVAL with why set to what is wrong with it.
 */
int ufs_record_attach(struct ufs_record *r, int fd, char *why, size_t why_len);
void ufs_record_close(struct ufs_record *r);

/* The INIT exchange, as the successor must reproduce it. */
void ufs_record_set_init(struct ufs_record *r, const void *in, size_t in_len, const void *out,
			 size_t out_len, unsigned int conn_id);

/* ---- nodes, all under the inode store's lock ---- */

/*
 * A node the kernel now holds nlookup lookups of; the handle names its file.
 * Returns its slot + 1, or 0 when it cannot be recorded (the record is then
 * marked incomplete: a successor could not resolve it).
 */
uint32_t ufs_record_node_add(struct ufs_record *r, uint64_t nodeid, uint64_t nlookup, dev_t dev,
			     ino_t ino, mode_t type, int mount_id, int handle_type,
			     const void *handle, unsigned int handle_bytes);
void ufs_record_node_lookups(struct ufs_record *r, uint32_t slot, uint64_t nlookup);
void ufs_record_node_set_flags(struct ufs_record *r, uint32_t slot, uint32_t flags);
void ufs_record_node_parent(struct ufs_record *r, uint32_t slot, uint64_t parent);
void ufs_record_node_exported(struct ufs_record *r, uint32_t slot, uint64_t parent);
void ufs_record_node_drop(struct ufs_record *r, uint32_t slot);
void ufs_record_next_nodeid(struct ufs_record *r, uint64_t next);

/* ---- open files, at their fh table index ---- */

void ufs_record_file_set(struct ufs_record *r, uint32_t index, uint32_t gen, uint64_t nodeid,
			 int flags, enum ufs_record_file_kind kind, unsigned int io_mode,
			 int backing_id, uint32_t charged_uid);
void ufs_record_file_drop(struct ufs_record *r, uint32_t index);

#endif /* UFS_RECORD_H */
