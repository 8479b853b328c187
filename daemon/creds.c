// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-request credentials for calls that create an inode.
 *
 * With allow_other, a daemon running as root creates files for many users.
 * Around mknod, mkdir, symlink, create, link and tmpfile the worker thread
 * takes the caller's fsuid, fsgid and supplementary groups, so the backing
 * file system assigns ownership, applies the setgid-directory rule and
 * checks permissions exactly as for a local call.  The raw system calls are
 * used on purpose: they change only the calling thread, while glibc's
 * wrappers would change every thread of the process.  Changing fsuid from 0
 * also drops CAP_DAC_OVERRIDE, CAP_MKNOD and friends for this thread, and
 * switching back restores them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"

#define CREDS_MAX_GROUPS 32

static int thread_setgroups(size_t n, const gid_t *groups)
{
	return syscall(SYS_setgroups, n, groups) ? -errno : 0;
}

/* setfsuid() reports no error: read the value back to know it took. */
static int thread_setfsuid(uid_t uid)
{
	setfsuid(uid);
	return (uid_t)setfsuid(-1) == uid ? 0 : -EPERM;
}

static int thread_setfsgid(gid_t gid)
{
	setfsgid(gid);
	return (gid_t)setfsgid(-1) == gid ? 0 : -EPERM;
}

int ufs_creds_enter(struct ufs_fs *fs, const struct ufs_req *req, struct ufs_creds *saved)
{
	gid_t groups[CREDS_MAX_GROUPS];
	uint32_t n = req->args.group_count;
	int ret;

	saved->switched = false;
	if (!fs->running_as_root || (req->in->uid == 0 && req->in->gid == 0))
		return 0;
	if (req->in->uid == FUSE_INVALID_UIDGID || req->in->gid == FUSE_INVALID_UIDGID)
		return -EOVERFLOW;

	if (n > CREDS_MAX_GROUPS)
		n = CREDS_MAX_GROUPS;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t gid;

		memcpy(&gid, req->args.groups + i * sizeof(gid), sizeof(gid));
		groups[i] = gid;
	}

	/* Groups and gid first: once fsuid is not 0 we may lack the right to change them. */
	ret = thread_setgroups(n, groups);
	if (ret)
		return ret;
	saved->switched = true;
	saved->uid = 0;
	saved->gid = 0;
	ret = thread_setfsgid(req->in->gid);
	if (!ret)
		ret = thread_setfsuid(req->in->uid);
	if (ret)
		ufs_creds_leave(saved);
	return ret;
}

void ufs_creds_leave(struct ufs_creds *saved)
{
	if (!saved->switched)
		return;
	/*
	 * Failing to become root again would leave this worker serving every
	 * later request with a client's identity: stop rather than do that.
	 */
	if (thread_setfsuid(saved->uid) || thread_setfsgid(saved->gid) ||
	    thread_setgroups(0, NULL)) {
		ufs_err("cannot restore the worker's credentials: %m");
		abort();
	}
	saved->switched = false;
}
