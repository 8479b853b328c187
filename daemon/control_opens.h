/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control file's opens (fs_control.c), counted per user.
 *
 * Each open holds a snapshot of the control file's text (some KiB), so the
 * opens of ordinary users (neither root nor the daemon's own user, the
 * mount's owner) are bounded: at most UFS_CONTROL_USER_OPENS at once for
 * one user (EMFILE past it) and UFS_CONTROL_OPENS for all of them together
 * (ENFILE).  Root's and the owner's opens are neither counted nor refused:
 * no other user can keep them from reading the counters.  The privileged
 * also see every request in flight; the others only their own.
 *
 * Pure accounting, no I/O: tests/unit/test-control-opens.c.
 */
#ifndef UFS_CONTROL_OPENS_H
#define UFS_CONTROL_OPENS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define UFS_CONTROL_USER_OPENS 8
#define UFS_CONTROL_OPENS 64

/* fs->control_opens, held by struct ufs_fs. */
struct ufs_control_opens {
	uid_t owner;			/* the daemon's euid: set at init, read-only then */
	pthread_mutex_t lock;		/* protects what follows; a leaf */
	unsigned int total;		/* open now by all ordinary users */
	uint64_t refused;		/* opens refused (EMFILE, ENFILE) */
	struct {
		uid_t uid;
		unsigned int n;		/* open now by uid; 0: a free entry */
	} users[UFS_CONTROL_OPENS];
};

int ufs_control_opens_init(struct ufs_control_opens *o, uid_t owner);
void ufs_control_opens_destroy(struct ufs_control_opens *o);
/* Root or the owner: sees every request in flight, never counted. */
bool ufs_control_opens_privileged(const struct ufs_control_opens *o, uid_t uid);
/* One more open for an ordinary uid: 0, or -EMFILE / -ENFILE (nothing counted). */
int ufs_control_opens_take(struct ufs_control_opens *o, uid_t uid);
/* One open taken for uid ends. */
void ufs_control_opens_drop(struct ufs_control_opens *o, uid_t uid);
/* The opens ordinary users hold now, and those refused so far. */
void ufs_control_opens_count(struct ufs_control_opens *o, unsigned int *open, uint64_t *refused);

#endif /* UFS_CONTROL_OPENS_H */
