// SPDX-License-Identifier: GPL-2.0-or-later
/* The control file's opens per user (daemon/control_opens.c): pure accounting. */
#include <errno.h>

#include "control_opens.h"
#include "tap.h"

static unsigned int open_now(struct ufs_control_opens *o)
{
	unsigned int open;
	uint64_t refused;

	ufs_control_opens_count(o, &open, &refused);
	return open;
}

static void test_privileged(void)
{
	struct ufs_control_opens o;

	ufs_control_opens_init(&o, 1000);
	ok(ufs_control_opens_privileged(&o, 0), "root is privileged");
	ok(ufs_control_opens_privileged(&o, 1000), "so is the owner");
	ok(!ufs_control_opens_privileged(&o, 1001), "another user is not");
	ok(!ufs_control_opens_privileged(&o, (uid_t)-1), "nor an unknown one");
	ufs_control_opens_destroy(&o);
}

static void test_user_bound(void)
{
	struct ufs_control_opens o;
	int ret = 0;

	ufs_control_opens_init(&o, 0);
	for (int i = 0; i < UFS_CONTROL_USER_OPENS && !ret; i++)
		ret = ufs_control_opens_take(&o, 1001);
	is_int(ret, 0, "a user opens up to its bound");
	is_int(ufs_control_opens_take(&o, 1001), -EMFILE, "one more is EMFILE");
	is_int(open_now(&o), UFS_CONTROL_USER_OPENS, "the refused one is not counted");
	is_int(ufs_control_opens_take(&o, 1002), 0, "another user has its own bound");
	ufs_control_opens_drop(&o, 1001);
	is_int(ufs_control_opens_take(&o, 1001), 0, "a close makes room again");
	ufs_control_opens_drop(&o, 4242);
	is_int(open_now(&o), UFS_CONTROL_USER_OPENS + 1,
	       "dropping a uid with none changes nothing");
	is_int(o.refused, 1, "refusals counted");
	ufs_control_opens_destroy(&o);
}

static void test_total_bound(void)
{
	struct ufs_control_opens o;
	unsigned int users = UFS_CONTROL_OPENS / UFS_CONTROL_USER_OPENS;
	int ret = 0;

	ufs_control_opens_init(&o, 0);
	for (unsigned int u = 0; u < users; u++)
		for (int i = 0; i < UFS_CONTROL_USER_OPENS && !ret; i++)
			ret = ufs_control_opens_take(&o, 2000 + u);
	is_int(ret, 0, "users fill the bound of all together");
	is_int(ufs_control_opens_take(&o, 3000), -ENFILE, "a new user then gets ENFILE");
	is_int(ufs_control_opens_take(&o, 2000), -EMFILE, "one at its own bound EMFILE");
	ufs_control_opens_drop(&o, 2001);
	is_int(ufs_control_opens_take(&o, 3000), 0, "a close lets the new user in");
	is_int(ufs_control_opens_take(&o, 3001), -ENFILE, "and only it");
	for (unsigned int u = 0; u < users; u++)
		for (int i = 0; i < UFS_CONTROL_USER_OPENS; i++)
			ufs_control_opens_drop(&o, 2000 + u);
	ufs_control_opens_drop(&o, 3000);
	is_int(open_now(&o), 0, "everything returned");
	/* One open each: as many users as the table has entries. */
	ret = 0;
	for (unsigned int u = 0; u < UFS_CONTROL_OPENS && !ret; u++)
		ret = ufs_control_opens_take(&o, 5000 + u);
	is_int(ret, 0, "as many users as opens");
	is_int(ufs_control_opens_take(&o, 6000), -ENFILE, "one more user: ENFILE");
	ufs_control_opens_destroy(&o);
}

int main(void)
{
	test_privileged();
	test_user_bound();
	test_total_bound();
	return t_done();
}
