/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One daemon per export store (store.h): flock on a lock file beside it,
 * held from before the store is read until exit.
 */
#ifndef UFS_STORE_LOCK_H
#define UFS_STORE_LOCK_H

#include <stddef.h>

#include "store_state.h"

/*
 * A take-over: the predecessor, paused (it writes no more records), lets
 * the successor take the store's lock; if the take-over fails it takes it
 * back, or stops writing records if the store is no longer its own.
 */
int ufs_store_lock(struct ufs_store *s, const char *dir, char *why, size_t why_len);
/* Warns if a parent of dir lets another user replace it. */
void ufs_store_check_parents(const char *dir);
void ufs_store_unlock(struct ufs_store *s);
void ufs_store_relock(struct ufs_store *s);

#endif /* UFS_STORE_LOCK_H */
