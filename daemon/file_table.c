// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The open-file table: open files and the fh values the kernel holds for
 * them (file_table.h says how an fh is made).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "file_table.h"

#define CHUNK_SHIFT 10
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define MAX_CHUNKS 16384u	/* 16M open files */

struct file_slot {
	struct ufs_file *file;
	uint32_t gen;
	uint32_t next_free;	/* slot + 1, 0 ends the list */
};

static struct file_slot *slot_at(struct ufs_file_table *t, uint32_t index)
{
	struct ufs_file **chunk;

	if (index >= __atomic_load_n(&t->file_next, __ATOMIC_ACQUIRE))
		return NULL;
	chunk = t->file_chunks[index >> CHUNK_SHIFT];
	return (struct file_slot *)chunk + (index & (CHUNK_SLOTS - 1));
}

int ufs_file_table_init(struct ufs_file_table *t, const struct ufs_file_table_ops *ops, void *arg)
{
	t->ops = ops;
	t->arg = arg;
	t->file_free_head = 0;
	t->file_next = 0;
	t->file_count = 0;
	t->file_chunks = calloc(MAX_CHUNKS, sizeof(*t->file_chunks));
	if (!t->file_chunks)
		return -ENOMEM;
	return pthread_mutex_init(&t->file_lock, NULL) ? -ENOMEM : 0;
}

void ufs_file_table_destroy(struct ufs_file_table *t)
{
	for (uint32_t i = 0; i < t->file_next; i++) {
		struct file_slot *s = slot_at(t, i);

		if (s->file)
			t->ops->free(t->arg, s->file);
	}
	for (uint32_t c = 0; c < MAX_CHUNKS && t->file_chunks[c]; c++)
		free(t->file_chunks[c]);
	free(t->file_chunks);
	t->file_chunks = NULL;
	pthread_mutex_destroy(&t->file_lock);
}

static int slot_alloc(struct ufs_file_table *t, uint32_t *index)
{
	struct file_slot *s;

	if (t->file_free_head) {
		*index = t->file_free_head - 1;
		s = slot_at(t, *index);
		t->file_free_head = s->next_free;
		return 0;
	}
	if (t->file_next == MAX_CHUNKS * CHUNK_SLOTS)
		return -ENFILE;
	if (!(t->file_next & (CHUNK_SLOTS - 1))) {
		void *chunk = calloc(CHUNK_SLOTS, sizeof(struct file_slot));

		if (!chunk)
			return -ENOMEM;
		t->file_chunks[t->file_next >> CHUNK_SHIFT] = chunk;
	}
	*index = t->file_next;
	__atomic_store_n(&t->file_next, t->file_next + 1, __ATOMIC_RELEASE);
	return 0;
}

int ufs_file_register(struct ufs_file_table *t, struct ufs_file *file, uint64_t *fh)
{
	struct file_slot *s;
	uint32_t index;
	int ret;

	pthread_mutex_lock(&t->file_lock);
	ret = slot_alloc(t, &index);
	if (!ret) {
		s = slot_at(t, index);
		__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&s->file, file, __ATOMIC_RELEASE);
		*fh = (uint64_t)s->gen << 32 | (index + 1);
		t->file_count++;
		t->ops->record(t->arg, index, s->gen, file);
	}
	pthread_mutex_unlock(&t->file_lock);
	return ret;
}

struct ufs_file *ufs_file_lookup(struct ufs_file_table *t, uint64_t fh)
{
	uint32_t index = (uint32_t)fh - 1;
	struct file_slot *s;

	if (!(uint32_t)fh)
		return NULL;
	s = slot_at(t, index);
	if (!s || __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != fh >> 32)
		return NULL;
	return __atomic_load_n(&s->file, __ATOMIC_ACQUIRE);
}

struct ufs_file *ufs_file_unregister(struct ufs_file_table *t, uint64_t fh)
{
	struct ufs_file *file = NULL;
	uint32_t index = (uint32_t)fh - 1;
	struct file_slot *s;

	pthread_mutex_lock(&t->file_lock);
	s = (uint32_t)fh ? slot_at(t, index) : NULL;
	if (s && s->gen == fh >> 32 && s->file) {
		file = s->file;
		t->ops->unrecord(t->arg, index);
		__atomic_store_n(&s->file, NULL, __ATOMIC_RELEASE);
		/* the old fh is dead from now on */
		__atomic_store_n(&s->gen, s->gen + 1, __ATOMIC_RELEASE);
		s->next_free = t->file_free_head;
		t->file_free_head = index + 1;
		t->file_count--;
	}
	pthread_mutex_unlock(&t->file_lock);
	return file;
}

/* ---- hand-over ---- */

void ufs_file_for_each_fd(struct ufs_file_table *t, void (*fn)(void *arg, uint32_t index, int fd),
			  void *arg)
{
	pthread_mutex_lock(&t->file_lock);
	for (uint32_t i = 0; i < t->file_next; i++) {
		struct file_slot *s = slot_at(t, i);

		if (s->file && s->file->fd >= 0)
			fn(arg, i, s->file->fd);
	}
	pthread_mutex_unlock(&t->file_lock);
}

/*
 * A predecessor's open file, back at its index with its generation, so the
 * fh the kernel holds finds it.  Called before any request is served; the
 * free list is rebuilt by ufs_file_table_restored() once all are back.
 */
int ufs_file_restore(struct ufs_file_table *t, uint32_t index, uint32_t gen, struct ufs_file *file)
{
	struct file_slot *s;

	if (index >= MAX_CHUNKS * CHUNK_SLOTS)
		return -ENFILE;
	while (t->file_next <= index) {
		uint32_t unused;
		int ret = slot_alloc(t, &unused);

		if (ret)
			return ret;
	}
	s = slot_at(t, index);
	if (s->file)
		return -EEXIST;
	s->gen = gen;
	s->file = file;
	t->file_count++;
	t->ops->record(t->arg, index, gen, file);
	return 0;
}

void ufs_file_table_restored(struct ufs_file_table *t)
{
	t->file_free_head = 0;
	for (uint32_t i = t->file_next; i-- > 0;) {
		struct file_slot *s = slot_at(t, i);

		if (!s->file) {
			s->next_free = t->file_free_head;
			t->file_free_head = i + 1;
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
