/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Deep directories remembered inside SOURCE (confine_memo.c): "still inside"
 * for a directory too deep for /proc/self/fd's readlink (confine.c).
 */
#ifndef UFS_CONFINE_MEMO_H
#define UFS_CONFINE_MEMO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_confine_memo;

/*
 * The memory of SOURCE (root_fd), once it is open; NULL where it cannot
 * be kept (said once in the log): every deep check walks then.
 */
struct ufs_confine_memo *ufs_confine_memo_new(int root_fd);
void ufs_confine_memo_free(struct ufs_confine_memo *m);
/*
 * 0 if fd is inside SOURCE, whose root is (root_dev, root_ino), else
 * -ENOENT (or another negative errno).  m may be NULL: the walk.
 */
int ufs_confine_memo_check(struct ufs_confine_memo *m, int fd, dev_t root_dev, ino_t root_ino);
/*
 * The directory moves drained so far on SOURCE's file system, plus one (it
 * drains the queue first); 0 where nothing can be remembered (no memory,
 * or its watch broke).  A directory found inside SOURCE after this call
 * stays inside until the number changes: see ufs_check_beneath_dir.
 */
uint64_t ufs_confine_memo_moves(struct ufs_confine_memo *m);
/* Is fd on SOURCE's own mount, where the watch sees every move? */
bool ufs_confine_memo_watched(struct ufs_confine_memo *m, int fd);

#endif /* UFS_CONFINE_MEMO_H */
