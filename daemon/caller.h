/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What /proc/PID/status says about the thread a request came from (caller.c).
 */
#ifndef UFS_CALLER_H
#define UFS_CALLER_H

#include <stdbool.h>
#include <stdint.h>

struct ufs_req;

/* One "Key:\tvalue" line: > 0 for more, 0 when done, < 0 an error to end with. */
typedef int ufs_caller_line_fn(const char *key, const char *value, void *arg);

/*
 * Feed the caller's status lines after Uid: and Gid: to fn, if they show
 * the request's fsuid and fsgid.  Returns 0, fn's error, or a negative
 * errno when the caller cannot be read (-ESRCH: no pid, or not it).
 */
int ufs_caller_status(const struct ufs_req *req, ufs_caller_line_fn *fn, void *arg);

/*
 * Does the caller hold capability cap (CAP_FSETID ...) in the daemon's user
 * namespace?  Unreadable, or not acting as itself: uid 0 does.
 */
bool ufs_caller_capable(const struct ufs_req *req, int cap);

/*
 * Does the caller's CAP_SYS_RESOURCE count here: held (in caps, its CapEff,
 * or read now) and in the daemon's user namespace?  Unreadable: uid 0's does.
 */
bool ufs_caller_sys_resource(const struct ufs_req *req, uint64_t caps);
bool ufs_caller_has_resource(const struct ufs_req *req);

/*
 * Has the caller a signal pending that it does not block?  1 or 0, or a
 * negative errno when it cannot be read.
 */
int ufs_caller_signalled(const struct ufs_req *req);

/*
 * The calling thread's own fsuid, for a request whose header carries none:
 * with FUSE_ALLOW_IDMAP the kernel sends FUSE_INVALID_UIDGID in every
 * request but the creating ones (fs/fuse/dev.c: fuse_get_req, given
 * invalid_mnt_idmap).  An io_uring worker's is its process's (the thread
 * group's leader).  By PIDFD_GET_INFO (6.13), else the status file.
 * Returns 0, or -errno: -ESRCH when there is no caller or it is gone,
 * -EPERM for a kernel thread (nfsd acts with its client's credentials
 * over its own, which would say root) or a worker before 6.13.
 */
int ufs_caller_own_uid(const struct ufs_req *req, uint32_t *uid);

#endif /* UFS_CALLER_H */
