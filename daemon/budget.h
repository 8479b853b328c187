/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's descriptors, charged to the users whose opens hold them.
 *
 * RLIMIT_NOFILE is one pool for the whole mount: without a budget one user
 * opening its own file again and again fills it, and every other user (and
 * root) then gets EMFILE for anything that needs a descriptor.  Each
 * ordinary user may hold at most `share` descriptors, and all of them
 * together at most `pool`; what is left of the limit (the reserve) stays for
 * root, the daemon's own descriptors and uncharged ones (cached inode
 * descriptors).  The one over its budget gets EMFILE.
 *
 * A few users at their share fill the pool (with auto, four): so that they,
 * not everybody else, meet the EMFILE, a user holding no more than `floor`
 * is charged past a full pool, borrowing from the reserve, as long as all
 * ordinary users together hold no more than pool + borrow (half the
 * reserve: root and the daemon keep the other half).
 *
 * Pure accounting, no I/O: tests/unit/test-budget.c.
 */
#ifndef UFS_BUDGET_H
#define UFS_BUDGET_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#define UFS_BUDGET_BUCKETS 256

struct ufs_budget_user;

struct ufs_budget {
	pthread_mutex_t lock;
	unsigned int share;	/* per ordinary user; 0: nothing is enforced */
	unsigned int pool;	/* all ordinary users together */
	unsigned int floor;	/* what a user may hold even with the pool full */
	unsigned int borrow;	/* how far past pool the floors may take it */
	unsigned int pooled;	/* charged to ordinary users now */
	uint64_t refused;	/* charges refused (EMFILE) */
	struct ufs_budget_user *buckets[UFS_BUDGET_BUCKETS];
};

/*
 * From a descriptor limit: the reserve kept out of every user's reach and
 * the per-user share ("auto"); see docs/architecture.md.
 */
unsigned int ufs_budget_reserve(unsigned long nofile);
unsigned int ufs_budget_auto_share(unsigned long nofile);

/* share: per user (0: auto from nofile); nofile: the daemon's RLIMIT_NOFILE. */
int ufs_budget_init(struct ufs_budget *b, unsigned int share, unsigned long nofile);
void ufs_budget_destroy(struct ufs_budget *b);

/* Every user's floor (at most half its share): see fits() in budget.c. */
#define UFS_BUDGET_FLOOR 32

/*
 * Charge n descriptors to uid: 0, or -EMFILE when uid (or all ordinary
 * users together, outside uid's floor) would go over budget; nothing is
 * charged then.  Root (uid 0) is never refused nor counted: it may
 * exhaust the limit natively.
 */
int ufs_budget_charge(struct ufs_budget *b, uid_t uid, unsigned int n);
void ufs_budget_uncharge(struct ufs_budget *b, uid_t uid, unsigned int n);
/* Charge without a check: a predecessor's opens, already held. */
void ufs_budget_force(struct ufs_budget *b, uid_t uid, unsigned int n);
unsigned int ufs_budget_held(struct ufs_budget *b, uid_t uid);

#endif
