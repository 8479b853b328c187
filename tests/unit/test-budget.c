// SPDX-License-Identifier: GPL-2.0-or-later
/* The per-user descriptor budget (daemon/budget.c): pure accounting. */
#include <errno.h>

#include "budget.h"
#include "tap.h"

static void test_auto(void)
{
	is_int(ufs_budget_reserve(20000), 5000, "20000: a quarter is reserved");
	is_int(ufs_budget_auto_share(20000), 3750, "20000: a quarter of the rest per user");
	is_int(ufs_budget_reserve(1024), 256, "1024: at least 256 reserved");
	is_int(ufs_budget_auto_share(1024), 192, "1024: share");
	is_int(ufs_budget_reserve(100), 50, "100: never more than half reserved");
	is_int(ufs_budget_auto_share(100), 12, "100: share");
	is_int(ufs_budget_auto_share(1), 1, "a tiny limit still lets a user open one file");
	ok(ufs_budget_auto_share(1UL << 40) > 0, "a huge limit does not overflow");
}

static void test_share(void)
{
	struct ufs_budget b;
	int i, ret = 0;

	ufs_budget_init(&b, 3, 1024);
	for (i = 0; i < 3 && !ret; i++)
		ret = ufs_budget_charge(&b, 1000, 1);
	is_int(ret, 0, "a user charges up to its share");
	is_int(ufs_budget_charge(&b, 1000, 1), -EMFILE, "one more is EMFILE");
	is_int(ufs_budget_held(&b, 1000), 3, "the refused charge is not counted");
	is_int(ufs_budget_charge(&b, 1001, 2), 0, "another user has its own share");
	is_int(ufs_budget_charge(&b, 0, 100), 0, "root is never refused");
	is_int(ufs_budget_held(&b, 0), 0, "nor counted");
	ufs_budget_uncharge(&b, 1000, 1);
	is_int(ufs_budget_charge(&b, 1000, 1), 0, "a release makes room again");
	is_int(ufs_budget_charge(&b, 1000, 2), -EMFILE, "a charge of two is whole or nothing");
	ufs_budget_uncharge(&b, 1000, 10);
	is_int(ufs_budget_held(&b, 1000), 0, "uncharging more than held stops at zero");
	is_int(b.pooled, 2, "the pool counts what ordinary users hold");
	ufs_budget_force(&b, 1001, 5);
	is_int(ufs_budget_held(&b, 1001), 7, "a forced charge goes over the share");
	is_int(ufs_budget_charge(&b, 1001, 1), -EMFILE, "and further charges are refused");
	is_int((long long)b.refused, 3, "refusals are counted");
	ufs_budget_destroy(&b);
}

static void test_pool(void)
{
	struct ufs_budget b;
	unsigned int uid;
	int ret = 0;

	/* 100 descriptors: 50 reserved, 50 for all ordinary users, 12 each. */
	ufs_budget_init(&b, 0, 100);
	is_int(b.share, 12, "auto share");
	is_int(b.pool, 50, "pool");
	is_int(b.floor, 6, "a small share: the floor is half of it");
	is_int(b.borrow, 25, "half the reserve may be borrowed");
	for (uid = 1; uid <= 4 && !ret; uid++)
		ret = ufs_budget_charge(&b, uid, 12);
	is_int(ret, 0, "four users take their shares");
	is_int(ufs_budget_charge(&b, 5, 2), 0, "a fifth finds the pool's rest");
	is_int(ufs_budget_charge(&b, 1, 1), -EMFILE, "the pool is full for a user at its share");
	is_int(ufs_budget_charge(&b, 6, 6), 0, "a sixth gets its floor past the full pool");
	is_int(ufs_budget_charge(&b, 6, 1), -EMFILE, "but no more than its floor");
	is_int(ufs_budget_charge(&b, 5, 4), 0, "the fifth too, up to its floor");
	is_int(ufs_budget_charge(&b, 5, 1), -EMFILE, "and no further");
	is_int(ufs_budget_charge(&b, 0, 1), 0, "root still gets the reserve");
	for (uid = 1; uid <= 6; uid++)
		ufs_budget_uncharge(&b, uid, 12);
	is_int(b.pooled, 0, "everything returned");
	ufs_budget_destroy(&b);
}

/*
 * Four users at their share fill the pool; every other user still gets its
 * floor, the users together at most pool + half the reserve (1024: 768 +
 * 128, floor 32): the flooders are the ones refused.
 */
static void test_floor(void)
{
	struct ufs_budget b;
	unsigned int uid, got = 0;

	ufs_budget_init(&b, 0, 1024);
	is_int(b.floor, UFS_BUDGET_FLOOR, "1024: the floor is 32");
	is_int(b.borrow, 128, "1024: 128 may be borrowed");
	for (uid = 1001; uid <= 1004; uid++)
		while (!ufs_budget_charge(&b, uid, 2))
			;
	is_int(b.pooled, 768, "four users at their share fill the pool");
	is_int(ufs_budget_charge(&b, 1001, 1), -EMFILE, "a flooder is refused");
	is_int(ufs_budget_charge(&b, 1, 2), 0, "a fifth user opens a file (2)");
	is_int(ufs_budget_charge(&b, 1, 1), 0, "and a directory");
	is_int(ufs_budget_charge(&b, 1, 29), 0, "up to its floor");
	is_int(ufs_budget_charge(&b, 1, 1), -EMFILE, "not past it while the pool is full");
	is_int(ufs_budget_charge(&b, 2, 40), -EMFILE,
	       "a charge past the floor is whole or nothing");
	for (uid = 2; uid < 10; uid++)
		while (!ufs_budget_charge(&b, uid, 1))
			got++;
	is_int(got, 96, "other users share the rest of the borrow (128 - 32)");
	is_int(b.pooled, 768 + 128, "the users together hold pool + half the reserve at most");
	is_int(ufs_budget_charge(&b, 11, 1), -EMFILE, "then even a new user is refused");
	is_int(ufs_budget_charge(&b, 0, 1), 0, "root is not");
	ufs_budget_uncharge(&b, 1001, 100);
	is_int(ufs_budget_charge(&b, 1001, 1), -EMFILE,
	       "a flooder waits until the borrowed part is back");
	is_int(ufs_budget_charge(&b, 11, 2), 0, "a light user does not");
	ufs_budget_uncharge(&b, 1, 32);
	ufs_budget_uncharge(&b, 11, 2);
	for (uid = 2; uid < 10; uid++)
		ufs_budget_uncharge(&b, uid, 32);
	is_int(b.pooled, 668, "the borrowed part is back");
	is_int(ufs_budget_charge(&b, 1001, 2), 0, "and the flooder is charged again");
	ufs_budget_force(&b, 1002, 10);
	is_int(ufs_budget_charge(&b, 1002, 1), -EMFILE, "forced over its share: refused");
	ufs_budget_destroy(&b);

	/* A share below twice the floor: half of it, so a full share is not within it. */
	ufs_budget_init(&b, 40, 1024);
	is_int(b.floor, 20, "share 40: floor 20");
	ufs_budget_destroy(&b);
	ufs_budget_init(&b, 2, 1024);
	is_int(b.floor, 1, "share 2: floor 1");
	ufs_budget_destroy(&b);
}

static void test_many_users(void)
{
	struct ufs_budget b;
	unsigned int uid, bad = 0;

	ufs_budget_init(&b, 2, 1UL << 20);
	for (uid = 1; uid < 5000; uid++)
		bad += ufs_budget_charge(&b, uid, 2) != 0;
	for (uid = 1; uid < 5000; uid++)
		bad += ufs_budget_held(&b, uid) != 2;
	for (uid = 1; uid < 5000; uid++)
		ufs_budget_uncharge(&b, uid, 2);
	is_int(bad, 0, "thousands of users, each counted apart");
	is_int(b.pooled, 0, "and all returned");
	ufs_budget_destroy(&b);
}

int main(void)
{
	test_auto();
	test_share();
	test_pool();
	test_floor();
	test_many_users();
	return t_done();
}
