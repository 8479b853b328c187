// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Whose limits a backing call meets.
 *
 * A root daemon serving another user's write would otherwise consume the
 * backing file system's space as root: ext4 hands its reserved blocks to
 * fsuid == s_resuid (0), a group in s_resgid or CAP_SYS_RESOURCE, and the
 * quota code lets CAP_SYS_RESOURCE exceed hard limits (ignore_hardlimit).
 * Around a call that consumes space for a client (WRITE, FALLOCATE,
 * COPY_FILE_RANGE, LINK, RENAME, SETXATTR, SETATTR, the attribute ioctl,
 * and the registration of a passthrough backing file, whose credentials
 * the kernel keeps for its writes) the worker thread takes:
 *  - the client's fsuid and fsgid, and no supplementary groups (only the
 *    fsgid counts for s_resgid: fewer rights than natively, never more);
 *  - its own effective capabilities again (setfsuid(2) away from 0 drops
 *    CAP_DAC_OVERRIDE, CAP_FOWNER ... which the kernel has already
 *    decided for the client: permission decisions stay as they were),
 *    minus CAP_SYS_RESOURCE unless the client holds it in the daemon's
 *    user namespace (creds.c decides that).
 * The raw system calls change the calling thread only (see creds.c).
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ident.h"
#include "log.h"

bool ufs_ident_equal(const struct ufs_ident *a, const struct ufs_ident *b)
{
	if (!a->set || !b->set)
		return a->set == b->set;
	return a->uid == b->uid && a->gid == b->gid && a->sys_resource == b->sys_resource;
}

static int caps_get(struct ufs_ident_saved *s)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	for (int i = 0; i < 2; i++) {
		s->effective[i] = data[i].effective;
		s->permitted[i] = data[i].permitted;
		s->inheritable[i] = data[i].inheritable;
	}
	return 0;
}

/* capset(2) with pid 0: the calling thread's effective set. */
static int caps_set(const struct ufs_ident_saved *s, const uint32_t effective[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	for (int i = 0; i < 2; i++) {
		data[i].effective = effective[i];
		data[i].permitted = s->permitted[i];
		data[i].inheritable = s->inheritable[i];
	}
	return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

/* setfsuid() reports no error: read the value back to know it took. */
static bool set_fsuid(uid_t uid)
{
	setfsuid(uid);
	return (uid_t)setfsuid(-1) == uid;
}

static bool set_fsgid(gid_t gid)
{
	setfsgid(gid);
	return (gid_t)setfsgid(-1) == gid;
}

int ufs_ident_enter(const struct ufs_ident *who, uint64_t drop, struct ufs_ident_saved *saved)
{
	uint32_t effective[2];
	int ret;

	saved->switched = false;
	saved->fsuid_changed = false;
	if (!who->set && !drop)
		return 0;
	if (who->set && !who->sys_resource)
		drop |= 1ULL << CAP_SYS_RESOURCE;
	ret = caps_get(saved);
	if (ret)
		return ret;
	if (who->set && (who->uid || who->gid)) {
		/* Groups first: once fsuid is not 0 ... we keep CAP_SETGID, but be plain. */
		if (syscall(SYS_getgroups, 0, NULL) > 0 && syscall(SYS_setgroups, 0, NULL))
			return -errno;
		saved->fsuid_changed = true;
		saved->switched = true;
		if (!set_fsgid(who->gid) || !set_fsuid(who->uid)) {
			ufs_ident_leave(saved);
			return -EPERM;
		}
	}
	effective[0] = saved->effective[0] & ~(uint32_t)drop;
	effective[1] = saved->effective[1] & ~(uint32_t)(drop >> 32);
	/* Nothing to drop (a daemon without CAP_SYS_RESOURCE), no fsuid change: done. */
	if (!saved->fsuid_changed && effective[0] == saved->effective[0] &&
	    effective[1] == saved->effective[1])
		return 0;
	saved->switched = true;
	/* Also raises again what setfsuid() dropped: the daemon decides as before. */
	ret = caps_set(saved, effective);
	if (ret)
		ufs_ident_leave(saved);
	return ret;
}

void ufs_ident_leave(struct ufs_ident_saved *saved)
{
	if (!saved->switched)
		return;
	/*
	 * Failing to become the daemon again would leave this worker serving
	 * later requests with a client's limits, or its own without the
	 * capabilities it needs: stop rather than do that.
	 */
	if (saved->fsuid_changed && (!set_fsuid(0) || !set_fsgid(0))) {
		ufs_err("cannot restore the worker's identity: %m");
		abort();
	}
	if (caps_set(saved, saved->effective)) {
		ufs_err("cannot restore the worker's capabilities: %m");
		abort();
	}
	saved->switched = false;
	saved->fsuid_changed = false;
}
