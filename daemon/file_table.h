/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The open-file table: open files and the fh values the kernel holds for
 * them (file_table.c).
 *
 * An fh is (generation << 32 | slot + 1), so a stale or forged fh from a
 * broken request is refused instead of dereferenced.  Slots live in chunks
 * that never move; lookups take no lock because the kernel never uses an fh
 * concurrently with its RELEASE.
 */
#ifndef UFS_FILE_TABLE_H
#define UFS_FILE_TABLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ident.h"
#include "passthrough.h"

struct ufs_inode;

/* An open file or directory, referenced by the fh the kernel holds. */
struct ufs_file {
	/*
	 * -1 for the control file, and for a passed-through open, whose I/O
	 * the kernel does by its backing id: ufs_file_fd() opens one per request.
	 */
	int fd;
	uid_t uid;			/* the opener */
	bool charged;			/* fd is charged to uid (budget.h) */
	bool pin_linked;		/* in its inode's opens (ufs_file_pin) */
	struct ufs_file *pin_next;	/* the inode's opens; inode->lock */
	int flags;			/* O_ACCMODE | O_APPEND | O_DIRECT ... as opened */
	struct ufs_inode *inode;	/* holds a ref */
	bool is_dir;
	enum ufs_io_mode io_mode;	/* counted in inode->io_opens unless NONE */
	/* whose limits its writes meet when no caller is known (writeback) */
	struct ufs_ident opener;
	bool opener_known;		/* false: restored from a hand-over */
	/* directory stream; protected by dir_lock */
	pthread_mutex_t dir_lock;
	uint64_t dir_offset;		/* cookie the next getdents starts from */
	char *dir_buf;			/* getdents64 buffer */
	size_t dir_len, dir_pos;	/* bytes in dir_buf, next entry */
	/* the control file: a snapshot taken at open */
	char *control_text;
	size_t control_len;
	bool control_counted;		/* in fs->control_opens (control_opens.h) */
};

/*
 * What the table's owner does beside it (the file system: fs_file.c), each
 * called with arg: keep a file's hand-over record (under file_lock, so the
 * record and the table agree), drop it, and free a file left in the table
 * when it is destroyed.
 */
struct ufs_file_table_ops {
	void (*record)(void *arg, uint32_t index, uint32_t gen, const struct ufs_file *file);
	void (*unrecord)(void *arg, uint32_t index);
	void (*free)(void *arg, struct ufs_file *file);
};

/* The table (fs->files). */
struct ufs_file_table {
	const struct ufs_file_table_ops *ops;	/* set at init, then read-only */
	void *arg;
	pthread_mutex_t file_lock;	/* protects the free list, file_count, the records */
	/* chunks of slots: a chunk never moves once made (under file_lock) */
	struct ufs_file ***file_chunks;
	uint32_t file_free_head;	/* slot + 1 of the first free one, 0: none; file_lock */
	/* slots made so far: written under file_lock, read without (atomic) */
	uint32_t file_next;
	uint64_t file_count;		/* files in the table; file_lock */
};

int ufs_file_table_init(struct ufs_file_table *t, const struct ufs_file_table_ops *ops, void *arg);
/* Frees every file still in the table (ops->free), then the table. */
void ufs_file_table_destroy(struct ufs_file_table *t);
int ufs_file_register(struct ufs_file_table *t, struct ufs_file *file, uint64_t *fh);
struct ufs_file *ufs_file_lookup(struct ufs_file_table *t, uint64_t fh);
struct ufs_file *ufs_file_unregister(struct ufs_file_table *t, uint64_t fh);
struct ufs_file *ufs_file_new(struct ufs_inode *inode, int fd, int flags);
/* Every open file's backing descriptor with its index; the table must not change meanwhile. */
void ufs_file_for_each_fd(struct ufs_file_table *t,
			  void (*fn)(void *arg, uint32_t index, int fd), void *arg);
int ufs_file_restore(struct ufs_file_table *t, uint32_t index, uint32_t gen,
		     struct ufs_file *file);
void ufs_file_table_restored(struct ufs_file_table *t);

#endif /* UFS_FILE_TABLE_H */
