// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-user descriptor budget (budget.h): a small hash of uid -> count.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"

struct ufs_budget_user {
	uid_t uid;
	unsigned int held;
	struct ufs_budget_user *next;
};

/*
 * A quarter of the limit, at least 256 descriptors (but never more than
 * half), is kept for root and the daemon itself.
 */
unsigned int ufs_budget_reserve(unsigned long nofile)
{
	unsigned long reserve = nofile / 4;

	if (reserve < 256)
		reserve = nofile / 2 < 256 ? nofile / 2 : 256;
	return reserve > UINT32_MAX ? UINT32_MAX : (unsigned int)reserve;
}

/* A quarter of what is left: four users flooding at once reach the reserve. */
unsigned int ufs_budget_auto_share(unsigned long nofile)
{
	unsigned long share = (nofile - ufs_budget_reserve(nofile)) / 4;

	if (share < 1)
		share = 1;
	return share > UINT32_MAX ? UINT32_MAX : (unsigned int)share;
}

int ufs_budget_init(struct ufs_budget *b, unsigned int share, unsigned long nofile)
{
	unsigned long pool = nofile - ufs_budget_reserve(nofile);

	unsigned long borrow = ufs_budget_reserve(nofile) / 2;

	memset(b, 0, sizeof(*b));
	b->share = share ? share : ufs_budget_auto_share(nofile);
	b->pool = pool > UINT32_MAX ? UINT32_MAX : (unsigned int)pool;
	if (b->pool < b->share)
		b->pool = b->share;
	b->floor = b->share / 2 < UFS_BUDGET_FLOOR ? b->share / 2 : UFS_BUDGET_FLOOR;
	b->borrow = borrow < UINT32_MAX - b->pool ? (unsigned int)borrow : UINT32_MAX - b->pool;
	return pthread_mutex_init(&b->lock, NULL) ? -ENOMEM : 0;
}

void ufs_budget_destroy(struct ufs_budget *b)
{
	for (unsigned int i = 0; i < UFS_BUDGET_BUCKETS; i++) {
		while (b->buckets[i]) {
			struct ufs_budget_user *u = b->buckets[i];

			b->buckets[i] = u->next;
			free(u);
		}
	}
	pthread_mutex_destroy(&b->lock);
}

static struct ufs_budget_user **user_slot(struct ufs_budget *b, uid_t uid)
{
	struct ufs_budget_user **pp = &b->buckets[(uid * 2654435761u) >> 24];

	while (*pp && (*pp)->uid != uid)
		pp = &(*pp)->next;
	return pp;
}

/*
 * Whether uid, holding held, may be charged n more.  Its share bounds it
 * always.  The pool bounds it too, but not within its floor: a few users at
 * their share fill the pool (with auto, four do), and without a floor every
 * other ordinary user would then get EMFILE for one cat or ls, while the
 * error is for those who took the pool.  So a charge that leaves the user
 * at most at the floor goes past a full pool, into the reserve, as long as
 * all users together then hold no more than pool + borrow (half the
 * reserve: the other half stays for root and the daemon's own
 * descriptors).  The floor is 32 (16 opens, or 32 directory streams), or
 * half the share if that is less, so that a user at its share is never
 * within it: while the pool is full, only users under their floor are
 * charged, and what they borrowed returns as anybody closes.  O(1).
 * Residual: it takes more users to shut the others out, not an infinity:
 * the pool's four at their share plus borrow / floor more (at the limit of
 * 1024: 4 + 4) at their floor; root never.
 */
static bool fits(const struct ufs_budget *b, unsigned int held, unsigned int n)
{
	unsigned long after = (unsigned long)held + n;
	unsigned long pooled = (unsigned long)b->pooled + n;

	if (after > b->share)
		return false;
	if (pooled <= b->pool)
		return true;
	return after <= b->floor && pooled <= (unsigned long)b->pool + b->borrow;
}

static int charge(struct ufs_budget *b, uid_t uid, unsigned int n, bool check)
{
	struct ufs_budget_user **pp, *u;
	int ret = 0;

	if (!uid || !n || !b->share)
		return 0;
	pthread_mutex_lock(&b->lock);
	pp = user_slot(b, uid);
	u = *pp;
	if (check && !fits(b, u ? u->held : 0, n)) {
		b->refused++;
		ret = -EMFILE;
	} else if (!u && !(u = calloc(1, sizeof(*u)))) {
		ret = -ENOMEM;
	} else {
		if (!*pp) {
			u->uid = uid;
			*pp = u;
		}
		u->held += n;
		b->pooled += n;
	}
	pthread_mutex_unlock(&b->lock);
	return ret;
}

int ufs_budget_charge(struct ufs_budget *b, uid_t uid, unsigned int n)
{
	return charge(b, uid, n, true);
}

void ufs_budget_force(struct ufs_budget *b, uid_t uid, unsigned int n)
{
	/* Only ENOMEM can fail it: that user is undercounted, never refused wrongly. */
	(void)charge(b, uid, n, false);
}

void ufs_budget_uncharge(struct ufs_budget *b, uid_t uid, unsigned int n)
{
	struct ufs_budget_user **pp, *u;

	if (!uid || !n || !b->share)
		return;
	pthread_mutex_lock(&b->lock);
	pp = user_slot(b, uid);
	u = *pp;
	if (u) {
		n = n < u->held ? n : u->held;
		u->held -= n;
		b->pooled -= n;
		if (!u->held) {
			*pp = u->next;
			free(u);
		}
	}
	pthread_mutex_unlock(&b->lock);
}

unsigned int ufs_budget_held(struct ufs_budget *b, uid_t uid)
{
	struct ufs_budget_user *u;
	unsigned int held;

	pthread_mutex_lock(&b->lock);
	u = *user_slot(b, uid);
	held = u ? u->held : 0;
	pthread_mutex_unlock(&b->lock);
	return held;
}
