// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The control file's opens per user (control_opens.h): a small table of
 * uid -> count, never more entries than opens.
 */
#include <errno.h>
#include <string.h>

#include "control_opens.h"

int ufs_control_opens_init(struct ufs_control_opens *o, uid_t owner)
{
	memset(o, 0, sizeof(*o));
	o->owner = owner;
	return pthread_mutex_init(&o->lock, NULL) ? -ENOMEM : 0;
}

void ufs_control_opens_destroy(struct ufs_control_opens *o)
{
	pthread_mutex_destroy(&o->lock);
}

bool ufs_control_opens_privileged(const struct ufs_control_opens *o, uid_t uid)
{
	return uid == 0 || uid == o->owner;
}

int ufs_control_opens_take(struct ufs_control_opens *o, uid_t uid)
{
	unsigned int i, spare = UFS_CONTROL_OPENS;
	int ret = 0;

	pthread_mutex_lock(&o->lock);
	for (i = 0; i < UFS_CONTROL_OPENS; i++) {
		if (o->users[i].n && o->users[i].uid == uid)
			break;
		if (!o->users[i].n && spare == UFS_CONTROL_OPENS)
			spare = i;
	}
	if (i == UFS_CONTROL_OPENS)
		i = spare;
	/* No spare entry: as many users as opens, so the total is at its bound. */
	if (i < UFS_CONTROL_OPENS && o->users[i].n >= UFS_CONTROL_USER_OPENS)
		ret = -EMFILE;
	else if (i == UFS_CONTROL_OPENS || o->total >= UFS_CONTROL_OPENS)
		ret = -ENFILE;
	if (ret) {
		o->refused++;
	} else {
		o->users[i].uid = uid;
		o->users[i].n++;
		o->total++;
	}
	pthread_mutex_unlock(&o->lock);
	return ret;
}

void ufs_control_opens_drop(struct ufs_control_opens *o, uid_t uid)
{
	pthread_mutex_lock(&o->lock);
	for (unsigned int i = 0; i < UFS_CONTROL_OPENS; i++) {
		if (o->users[i].n && o->users[i].uid == uid) {
			o->users[i].n--;
			o->total--;
			break;
		}
	}
	pthread_mutex_unlock(&o->lock);
}

void ufs_control_opens_count(struct ufs_control_opens *o, unsigned int *open, uint64_t *refused)
{
	pthread_mutex_lock(&o->lock);
	*open = o->total;
	*refused = o->refused;
	pthread_mutex_unlock(&o->lock);
}
