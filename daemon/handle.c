// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Open files and the fh values the kernel holds for them.
 *
 * An fh is (generation << 32 | slot + 1), so a stale or forged fh from a
 * broken request is refused instead of dereferenced.  Slots live in chunks
 * that never move; lookups take no lock because the kernel never uses an fh
 * concurrently with its RELEASE.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "fs.h"

#define CHUNK_SHIFT 10
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define MAX_CHUNKS 16384u	/* 16M open files */

struct file_slot {
	struct ufs_file *file;
	uint32_t gen;
	uint32_t next_free;	/* slot + 1, 0 ends the list */
};

static struct file_slot *slot_at(struct ufs_fs *fs, uint32_t index)
{
	struct ufs_file **chunk;

	if (index >= __atomic_load_n(&fs->file_next, __ATOMIC_ACQUIRE))
		return NULL;
	chunk = fs->file_chunks[index >> CHUNK_SHIFT];
	return (struct file_slot *)chunk + (index & (CHUNK_SLOTS - 1));
}

int ufs_file_table_init(struct ufs_fs *fs)
{
	fs->file_chunks = calloc(MAX_CHUNKS, sizeof(*fs->file_chunks));
	if (!fs->file_chunks)
		return -ENOMEM;
	return pthread_mutex_init(&fs->file_lock, NULL) ? -ENOMEM : 0;
}

void ufs_file_table_destroy(struct ufs_fs *fs)
{
	for (uint32_t i = 0; i < fs->file_next; i++) {
		struct file_slot *s = slot_at(fs, i);

		if (s->file)
			ufs_file_free(fs, s->file);
	}
	for (uint32_t c = 0; c < MAX_CHUNKS && fs->file_chunks[c]; c++)
		free(fs->file_chunks[c]);
	free(fs->file_chunks);
	fs->file_chunks = NULL;
	pthread_mutex_destroy(&fs->file_lock);
}

static int slot_alloc(struct ufs_fs *fs, uint32_t *index)
{
	struct file_slot *s;

	if (fs->file_free_head) {
		*index = fs->file_free_head - 1;
		s = slot_at(fs, *index);
		fs->file_free_head = s->next_free;
		return 0;
	}
	if (fs->file_next == MAX_CHUNKS * CHUNK_SLOTS)
		return -ENFILE;
	if (!(fs->file_next & (CHUNK_SLOTS - 1))) {
		void *chunk = calloc(CHUNK_SLOTS, sizeof(struct file_slot));

		if (!chunk)
			return -ENOMEM;
		fs->file_chunks[fs->file_next >> CHUNK_SHIFT] = chunk;
	}
	*index = fs->file_next;
	__atomic_store_n(&fs->file_next, fs->file_next + 1, __ATOMIC_RELEASE);
	return 0;
}

/* The hand-over record of an open file: enough to open it again (record.h). */
static void record_file(struct ufs_fs *fs, uint32_t index, uint32_t gen,
			const struct ufs_file *file)
{
	enum ufs_record_file_kind kind = file->inode->control ? UFS_RECORD_CONTROL :
					 file->is_dir ? UFS_RECORD_DIR : UFS_RECORD_FILE;
	int backing_id = file->io_mode == UFS_IO_PASSTHROUGH ? file->inode->backing_id : 0;

	ufs_record_file_set(fs->record, index, gen, file->inode->nodeid, file->flags, kind,
			    file->io_mode, backing_id, file->uid + 1);
}

int ufs_file_register(struct ufs_fs *fs, struct ufs_file *file, uint64_t *fh)
{
	struct file_slot *s;
	uint32_t index;
	int ret;

	pthread_mutex_lock(&fs->file_lock);
	ret = slot_alloc(fs, &index);
	if (!ret) {
		s = slot_at(fs, index);
		__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&s->file, file, __ATOMIC_RELEASE);
		*fh = (uint64_t)s->gen << 32 | (index + 1);
		fs->file_count++;
		record_file(fs, index, s->gen, file);
	}
	pthread_mutex_unlock(&fs->file_lock);
	return ret;
}

struct ufs_file *ufs_file_lookup(struct ufs_fs *fs, uint64_t fh)
{
	uint32_t index = (uint32_t)fh - 1;
	struct file_slot *s;

	if (!(uint32_t)fh)
		return NULL;
	s = slot_at(fs, index);
	if (!s || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != fh >> 32)
		return NULL;
	return __atomic_load_n(&s->file, __ATOMIC_ACQUIRE);
}

struct ufs_file *ufs_file_unregister(struct ufs_fs *fs, uint64_t fh)
{
	struct ufs_file *file = NULL;
	uint32_t index = (uint32_t)fh - 1;
	struct file_slot *s;

	pthread_mutex_lock(&fs->file_lock);
	s = (uint32_t)fh ? slot_at(fs, index) : NULL;
	if (s && s->gen == fh >> 32 && s->file) {
		file = s->file;
		ufs_record_file_drop(fs->record, index);
		__atomic_store_n(&s->file, NULL, __ATOMIC_RELEASE);
		/* the old fh is dead from now on */
		__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
		s->next_free = fs->file_free_head;
		fs->file_free_head = index + 1;
		fs->file_count--;
	}
	pthread_mutex_unlock(&fs->file_lock);
	return file;
}

/* ---- hand-over ---- */

/* Every open file's backing descriptor with its index; the table must not change meanwhile. */
void ufs_file_for_each_fd(struct ufs_fs *fs, void (*fn)(void *arg, uint32_t index, int fd),
			  void *arg)
{
	pthread_mutex_lock(&fs->file_lock);
	for (uint32_t i = 0; i < fs->file_next; i++) {
		struct file_slot *s = slot_at(fs, i);

		if (s->file && s->file->fd >= 0)
			fn(arg, i, s->file->fd);
	}
	pthread_mutex_unlock(&fs->file_lock);
}

/*
 * A predecessor's open file, back at its index with its generation, so the
 * fh the kernel holds finds it.  Called before any request is served; the
 * free list is rebuilt by ufs_file_table_restored() once all are back.
 */
int ufs_file_restore(struct ufs_fs *fs, uint32_t index, uint32_t gen, struct ufs_file *file)
{
	struct file_slot *s;

	if (index >= MAX_CHUNKS * CHUNK_SLOTS)
		return -ENFILE;
	while (fs->file_next <= index) {
		uint32_t unused;
		int ret = slot_alloc(fs, &unused);

		if (ret)
			return ret;
	}
	s = slot_at(fs, index);
	if (s->file)
		return -EEXIST;
	s->gen = gen;
	s->file = file;
	fs->file_count++;
	record_file(fs, index, gen, file);
	return 0;
}

void ufs_file_table_restored(struct ufs_fs *fs)
{
	fs->file_free_head = 0;
	for (uint32_t i = fs->file_next; i-- > 0;) {
		struct file_slot *s = slot_at(fs, i);

		if (!s->file) {
			s->next_free = fs->file_free_head;
			fs->file_free_head = i + 1;
		}
	}
}

struct ufs_file *ufs_file_new(struct ufs_inode *inode, int fd, int flags)
{
	struct ufs_file *file = calloc(1, sizeof(*file));

	if (!file)
		return NULL;
	if (pthread_mutex_init(&file->dir_lock, NULL)) {
		free(file);
		return NULL;
	}
	file->fd = fd;
	file->flags = flags;
	file->inode = inode;
	return file;
}

/*
 * An open file pins its inode's O_PATH descriptor (inode.c: a handle-backed
 * inode in use keeps it): one descriptor for all opens of the inode, charged
 * to one of them (budget.h).  When that one is released and others remain,
 * the charge moves to one of those: the descriptor stays for them.  prepaid:
 * the caller charged file->uid for the pin already (taken back if another
 * open pays).  Without file handles every inode the kernel knows holds its
 * descriptor anyway, and no open is charged for it.
 */
void ufs_file_pin(struct ufs_fs *fs, struct ufs_file *file, bool prepaid)
{
	struct ufs_inode *inode = file->inode;
	bool pays = false;

	if (!fs->inodes.handles.usable || inode->control) {
		if (prepaid)
			ufs_budget_uncharge(&fs->budget, file->uid, 1);
		return;
	}
	pthread_mutex_lock(&inode->lock);
	file->pin_next = inode->opens;
	inode->opens = file;
	file->pin_linked = true;
	if (!inode->pin_payer) {
		inode->pin_payer = file;
		pays = true;
	}
	pthread_mutex_unlock(&inode->lock);
	if (pays && !prepaid)
		ufs_budget_force(&fs->budget, file->uid, 1);
	else if (!pays && prepaid)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
}

static void file_unpin(struct ufs_fs *fs, struct ufs_file *file)
{
	struct ufs_inode *inode = file->inode;
	struct ufs_file **pp, *heir = NULL;
	bool paid;

	if (!file->pin_linked)
		return;
	pthread_mutex_lock(&inode->lock);
	for (pp = &inode->opens; *pp && *pp != file; pp = &(*pp)->pin_next)
		;
	if (*pp)
		*pp = file->pin_next;
	paid = inode->pin_payer == file;
	if (paid)
		heir = inode->pin_payer = inode->opens;
	/* The heir is still linked, so still open: its uid is stable. */
	if (heir)
		ufs_budget_force(&fs->budget, heir->uid, 1);
	pthread_mutex_unlock(&inode->lock);
	file->pin_linked = false;
	if (paid)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
}

/* Closes the descriptor and drops the file's inode reference. */
void ufs_file_free(struct ufs_fs *fs, struct ufs_file *file)
{
	file_unpin(fs, file);
	ufs_io_path_release(fs, file);
	if (file->fd >= 0)
		close(file->fd);
	if (file->charged)
		ufs_budget_uncharge(&fs->budget, file->uid, 1);
	free(file->dir_buf);
	free(file->control_text);
	pthread_mutex_destroy(&file->dir_lock);
	ufs_inode_put(&fs->inodes, file->inode);
	free(file);
}
