// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The open-file table (daemon/file_table.c): fh values, their generations,
 * slot reuse, a predecessor's files put back at their indexes, and the
 * records the table asks its owner to keep.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "file_table.h"
#include "tap.h"

/* What the table asked of its owner. */
static struct {
	int records, unrecords, frees;
	uint32_t last_index, last_gen;
	const struct ufs_file *last_file;
} seen;

static void record(void *arg, uint32_t index, uint32_t gen, const struct ufs_file *file)
{
	(void)arg;
	seen.records++;
	seen.last_index = index;
	seen.last_gen = gen;
	seen.last_file = file;
}

static void unrecord(void *arg, uint32_t index)
{
	(void)arg;
	seen.unrecords++;
	seen.last_index = index;
}

static void free_file(void *arg, struct ufs_file *file)
{
	(void)arg;
	seen.frees++;
	pthread_mutex_destroy(&file->dir_lock);
	free(file);
}

static const struct ufs_file_table_ops ops = {
	.record = record,
	.unrecord = unrecord,
	.free = free_file,
};

static struct ufs_file *file_with_fd(int fd)
{
	struct ufs_file *f = ufs_file_new(NULL, fd, 0);

	if (!f)
		abort();
	return f;
}

static void test_register_lookup(void)
{
	struct ufs_file_table t;
	struct ufs_file *a = file_with_fd(-1), *b = file_with_fd(-1);
	uint64_t fa = 0, fb = 0;

	memset(&seen, 0, sizeof(seen));
	is_int(ufs_file_table_init(&t, &ops, NULL), 0, "init");
	is_int(ufs_file_register(&t, a, &fa), 0, "register a");
	is_int(seen.records, 1, "a register is recorded");
	ok(seen.last_file == a, "with its file");
	is_int(ufs_file_register(&t, b, &fb), 0, "register b");
	ok(fa != fb, "two files, two fh values");
	ok((uint32_t)fa != 0 && (uint32_t)fb != 0, "an fh's low half is never 0");
	ok(ufs_file_lookup(&t, fa) == a, "lookup finds a");
	ok(ufs_file_lookup(&t, fb) == b, "lookup finds b");
	is_int(t.file_count, 2, "two files counted");
	ok(!ufs_file_lookup(&t, 0), "fh 0 finds nothing");
	ok(!ufs_file_lookup(&t, fa + 1000), "an fh past the slots made finds nothing");
	ok(!ufs_file_lookup(&t, fa ^ (1ULL << 32)), "an fh with another generation finds nothing");

	ok(ufs_file_unregister(&t, fa) == a, "unregister a gives it back");
	is_int(seen.unrecords, 1, "its record is dropped");
	is_int(seen.last_index, (uint32_t)fa - 1, "at its index");
	ok(!ufs_file_lookup(&t, fa), "a's fh is dead after unregister");
	ok(!ufs_file_unregister(&t, fa), "a second unregister finds nothing");
	is_int(seen.unrecords, 1, "and drops no record");
	is_int(t.file_count, 1, "one file counted");
	free_file(NULL, a);

	ufs_file_table_destroy(&t);
	is_int(seen.frees, 2, "destroy frees the file still in the table (and only it)");
}

static void test_reuse(void)
{
	struct ufs_file_table t;
	struct ufs_file *a = file_with_fd(-1), *b = file_with_fd(-1), *c = file_with_fd(-1);
	uint64_t fa, fb, fc;

	memset(&seen, 0, sizeof(seen));
	ufs_file_table_init(&t, &ops, NULL);
	ufs_file_register(&t, a, &fa);
	ufs_file_register(&t, b, &fb);
	ufs_file_unregister(&t, fa);
	ufs_file_register(&t, c, &fc);
	is_int((uint32_t)fc, (uint32_t)fa, "a freed slot is used again");
	ok(fc >> 32 != fa >> 32, "with a new generation");
	ok(!ufs_file_lookup(&t, fa), "the old fh does not find the new file");
	ok(ufs_file_lookup(&t, fc) == c, "the new fh does");
	is_int(seen.last_gen, fc >> 32, "the record has the new generation");
	ok(ufs_file_unregister(&t, fa) == NULL, "unregister with the old fh is refused");
	ok(ufs_file_lookup(&t, fc) == c, "and leaves the new file");
	free_file(NULL, a);
	ufs_file_table_destroy(&t);
	is_int(seen.frees, 3, "destroy frees b and c");
}

static void count_fd(void *arg, uint32_t index, int fd)
{
	int *sum = arg;

	sum[0]++;
	sum[1] += (int)index * 1000 + fd;
}

static void test_restore(void)
{
	struct ufs_file_table t;
	struct ufs_file *a = file_with_fd(7), *b = file_with_fd(-1), *c = file_with_fd(9);
	struct ufs_file *d = file_with_fd(-1), *e = file_with_fd(-1);
	uint64_t fh = (uint64_t)5 << 32 | (1500 + 1), fd_, fe;
	int sum[2] = { 0, 0 };

	memset(&seen, 0, sizeof(seen));
	ufs_file_table_init(&t, &ops, NULL);
	is_int(ufs_file_restore(&t, 1500, 5, a), 0, "restore at index 1500, past the first chunk");
	is_int(seen.records, 1, "a restored file is recorded again");
	is_int(seen.last_index, 1500, "at its index");
	ok(ufs_file_lookup(&t, fh) == a, "the predecessor's fh finds it");
	is_int(ufs_file_restore(&t, 1500, 5, b), -EEXIST, "an index held is refused");
	is_int(ufs_file_restore(&t, 3, 2, c), 0, "restore at a lower index");
	is_int(ufs_file_restore(&t, 16384u * 1024u, 1, b), -ENFILE,
	       "an index past the table is refused");
	ufs_file_table_restored(&t);
	ufs_file_register(&t, d, &fd_);
	is_int((uint32_t)fd_ - 1, 0, "after restored, new files take the free slots, lowest first");
	ufs_file_register(&t, e, &fe);
	is_int((uint32_t)fe - 1, 1, "next free slot");
	ok(ufs_file_lookup(&t, (uint64_t)2 << 32 | 4) == c,
	   "the other restored fh still finds its file");

	ufs_file_for_each_fd(&t, count_fd, sum);
	is_int(sum[0], 2, "for_each_fd visits the files with a descriptor only");
	is_int(sum[1], 1500 * 1000 + 7 + 3 * 1000 + 9, "each with its index");
	free_file(NULL, b);
	ufs_file_table_destroy(&t);
	is_int(seen.frees, 5, "destroy frees all four in the table (b freed here)");
}

int main(void)
{
	test_register_lookup();
	test_reuse();
	test_restore();
	return t_done();
}
