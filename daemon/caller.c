// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What the kernel does not send about the caller of a request, read from
 * /proc/PID/status of the calling thread: its supplementary groups, its
 * capabilities, its pending signals.
 *
 * The kernel names the thread by its id in the mount's pid namespace (0
 * when it has none there): `current`, which may act for someone else
 * with credentials put over its own (override_creds: an io-wq worker of
 * the caller's ring, an nfsd thread serving a client).  The request
 * carries the credentials it acts with; /proc and capget(2) show its own.
 * A request can also outlive a caller that was killed, and then the id may
 * belong to someone else.  So what is read is trusted only while the
 * thread's own fsuid and fsgid are the request's: those lines come before
 * every other one that is read here.  An override that keeps them (a root
 * process acting with fewer capabilities) is not seen; fewer rights would
 * then be more.
 *
 * Capabilities alone are asked of the kernel instead when the request is
 * one its caller must wait for (caller_waits): the thread's own ids by
 * PIDFD_GET_INFO (Linux 6.13), then capget(2), three system calls and
 * about 5 us against 17-26 us for the status file, which an untar read
 * nine times a file.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caller.h"
#include "fuse_abi.h"
#include "linux_abi.h"
#include "req.h"

/* The fourth id of a "Uid:" or "Gid:" line: real, effective, saved, fs. */
static bool fs_id_is(const char *line, unsigned int want)
{
	unsigned int r, e, s, f;

	return sscanf(line, "%u %u %u %u", &r, &e, &s, &f) == 4 && f == want;
}

int ufs_caller_status(const struct ufs_req *req, ufs_caller_line_fn *fn, void *arg)
{
	char path[48], *line = NULL;
	bool uid_ok = false, gid_ok = false;
	size_t cap = 0;
	int ret = -ESRCH;
	FILE *f;

	if (!req->in->pid)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%u/status", req->in->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char *value = strchr(line, ':');

		if (!value)
			continue;
		*value++ = '\0';
		if (!strcmp(line, "Uid")) {
			uid_ok = fs_id_is(value, req->in->uid);
		} else if (!strcmp(line, "Gid")) {
			gid_ok = fs_id_is(value, req->in->gid);
		} else if (uid_ok && gid_ok) {
			ret = fn(line, value, arg);
			if (ret <= 0)
				break;	/* done, or an error */
		}
	}
	free(line);
	fclose(f);
	if (!(uid_ok && gid_ok))
		return -ESRCH;
	return ret > 0 ? 0 : ret;
}

/* A hexadecimal mask line ("SigPnd:\t0000000000000100"). */
static uint64_t mask_of(const char *value)
{
	return strtoull(value, NULL, 16);
}

struct caller_masks {
	uint64_t pending, shared, blocked, caps;
	unsigned int left;	/* lines still to find */
};

static int masks_line(const char *key, const char *value, void *arg)
{
	static const struct {
		const char *key;
		size_t off;
	} wanted[] = {
		{ "SigPnd", offsetof(struct caller_masks, pending) },
		{ "ShdPnd", offsetof(struct caller_masks, shared) },
		{ "SigBlk", offsetof(struct caller_masks, blocked) },
		{ "CapEff", offsetof(struct caller_masks, caps) },
	};
	struct caller_masks *m = arg;

	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		if (!strcmp(key, wanted[i].key)) {
			*(uint64_t *)((char *)m + wanted[i].off) = mask_of(value);
			m->left--;
			break;
		}
	}
	return m->left ? 1 : 0;
}

/*
 * Requests the kernel sends with fuse_simple_request() and never in the
 * background.  Once the daemon has read one, its caller waits for the
 * reply even through SIGKILL (fs/fuse/dev.c, request_wait_answer: "Either
 * request is already in userspace, or it was forced.  Wait it out."), so
 * until we reply the id names that very thread, whose credentials cannot
 * change meanwhile (whether they are the request's is caller_own_ids').
 */
static bool caller_waits(const struct ufs_req *req)
{
	switch (req->in->opcode) {
	case FUSE_OPEN:
	case FUSE_CREATE:
	case FUSE_MKNOD:
	case FUSE_MKDIR:
	case FUSE_SYMLINK:
	case FUSE_TMPFILE:
	case FUSE_SETATTR:
	case FUSE_LINK:
	case FUSE_RENAME:
	case FUSE_RENAME2:
	case FUSE_SETXATTR:
	case FUSE_IOCTL:
		return true;
	default:
		return false;
	}
}

/*
 * Does the calling thread act with its own fsuid and fsgid, the request's?
 * 1 yes, 0 no (credentials put over its own: its capabilities say nothing
 * of the request's), or a negative errno when the kernel cannot say.
 */
static int caller_own_ids(const struct ufs_req *req)
{
	struct ufs_pidfd_info info = { .mask = UFS_PIDFD_INFO_CREDS };
	int fd = (int)syscall(SYS_pidfd_open, req->in->pid, PIDFD_THREAD);
	int ret;

	if (fd < 0)
		return -errno;
	ret = ioctl(fd, UFS_PIDFD_GET_INFO, &info) ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	if (!(info.mask & UFS_PIDFD_INFO_CREDS))
		return -EOPNOTSUPP;
	return info.fsuid == req->in->uid && info.fsgid == req->in->gid;
}

/* What the status file says of a thread's own ids, before 6.13's PIDFD_GET_INFO. */
/* The fourth id of the caller's "Uid:" status line, before 6.13's PIDFD_GET_INFO. */
static int status_fsuid(const struct ufs_req *req, uint32_t *uid)
{
	char path[48], *line = NULL;
	size_t cap = 0;
	int ret = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", req->in->pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret && getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "Uid:", 4))
			ret = sscanf(line + 4, "%*u %*u %*u %u", uid) == 1 ? 0 : -EIO;
	}
	free(line);
	fclose(f);
	return ret;
}

#define PF_IO_WORKER_FLAG 0x00000010	/* include/linux/sched.h: PF_IO_WORKER */
#define PF_KTHREAD_FLAG 0x00200000	/* PF_KTHREAD */

/* Thread tid's flags, the ninth field of /proc/TID/stat: 0, or -errno. */
static int thread_flags(unsigned int tid, unsigned long *flags)
{
	char path[48], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	/* "pid (comm) state ppid pgrp session tty_nr tpgid flags": comm may hold anything */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", flags) != 1)
		return -EIO;
	return 0;
}

/* The fsuid and fsgid of a thread by PIDFD_GET_INFO (6.13): 0, or -errno. */
static int pidfd_ids(unsigned int tid, unsigned int flags, struct ufs_pidfd_info *info)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, flags), ret;

	if (fd < 0)
		return -errno;
	info->mask = UFS_PIDFD_INFO_PID | UFS_PIDFD_INFO_CREDS;
	ret = ioctl(fd, UFS_PIDFD_GET_INFO, info) ? -errno : 0;
	close(fd);
	if (!ret && !(info->mask & UFS_PIDFD_INFO_CREDS))
		ret = -EOPNOTSUPP;
	return ret;
}

int ufs_caller_own_uid(const struct ufs_req *req, uint32_t *uid)
{
	struct ufs_pidfd_info info;
	unsigned long flags = 0;
	int ret;

	if (!req->in->pid)
		return -ESRCH;
	ret = pidfd_ids(req->in->pid, PIDFD_THREAD, &info);
	if (!ret && info.pid != info.tgid && !thread_flags(info.pid, &flags) &&
	    (flags & PF_IO_WORKER_FLAG))
		/*
		 * An io-wq worker keeps the credentials it was made with (root's,
		 * in a process that dropped root since) and runs each call with
		 * its submitter's put over them: its process's, which the thread
		 * group's leader shows.  A personality registered on the ring
		 * shows as the leader too: a key, and the leader's own right.
		 */
		ret = pidfd_ids(info.tgid, 0, &info);
	if (!ret && (flags & PF_KTHREAD_FLAG || info.pid == 2 || info.ppid == 2))
		return -EPERM;	/* kthreadd's: nfsd acts with its client's credentials */
	if (!ret) {
		*uid = info.fsuid;
		return 0;
	}
	if (ret != -EOPNOTSUPP && ret != -ENOTTY && ret != -EINVAL)
		return ret;
	/* A kernel before 6.13 (FUSE_ALLOW_IDMAP came in 6.12): the status file. */
	ret = status_fsuid(req, uid);
	if (!ret && (thread_flags(req->in->pid, &flags) ||
		     (flags & (PF_IO_WORKER_FLAG | PF_KTHREAD_FLAG))))
		ret = -EPERM;
	return ret;
}

/* The caller's effective capabilities by capget(2): 0, or a negative errno. */
static int caller_capget(const struct ufs_req *req, uint64_t *caps)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
		.pid = (int)req->in->pid,
	};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*caps = data[0].effective | (uint64_t)data[1].effective << 32;
	return 0;
}

/* The caller's effective capabilities: 0, or a negative errno (-ESRCH: not its own). */
static int caller_caps(const struct ufs_req *req, uint64_t *caps)
{
	struct caller_masks m = { .left = 4 };
	int ret;

	if (caller_waits(req) && req->in->pid) {
		ret = caller_own_ids(req);
		if (!ret)
			return -ESRCH;
		if (ret > 0 && !caller_capget(req, caps))
			return 0;
		/* A kernel before 6.13: the status file says both. */
	}
	ret = ufs_caller_status(req, masks_line, &m);
	if (!ret)
		*caps = m.caps;
	return ret;
}

int ufs_caller_signalled(const struct ufs_req *req)
{
	struct caller_masks m = { .left = 4 };
	int ret = ufs_caller_status(req, masks_line, &m);

	if (ret)
		return ret;
	/* Ignored signals are never queued: a pending one will be delivered. */
	return ((m.pending | m.shared) & ~m.blocked) != 0;
}

/* The first line of a small proc file, for comparing. */
static bool read_small(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = '\0';
	return n > 0;
}

/*
 * Is the caller in the daemon's user namespace?  Capabilities held in
 * another one (a container's root) say nothing about ours.  Compared by
 * the namespace's inode; if that cannot be read, by the uid maps, which
 * differ between a namespace and its parent unless both are the initial
 * identity map.
 */
static bool caller_in_our_userns(const struct ufs_req *req)
{
	char path[48], theirs[256], ours[256];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%u/ns/user", req->in->pid);
	if (!stat(path, &a) && !stat("/proc/self/ns/user", &b))
		return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	snprintf(path, sizeof(path), "/proc/%u/uid_map", req->in->pid);
	return read_small(path, theirs, sizeof(theirs)) &&
	       read_small("/proc/self/uid_map", ours, sizeof(ours)) && !strcmp(theirs, ours);
}

/* cap in caps, held in the daemon's user namespace. */
static bool caps_count_here(const struct ufs_req *req, uint64_t caps, int cap)
{
	return ((caps >> cap) & 1) && caller_in_our_userns(req);
}

bool ufs_caller_capable(const struct ufs_req *req, int cap)
{
	uint64_t caps = 0;

	/* Unknown: as the kernel's own view of uid 0 is, without capabilities. */
	if (caller_caps(req, &caps))
		return req->in->uid == 0;
	return caps_count_here(req, caps, cap);
}

bool ufs_caller_sys_resource(const struct ufs_req *req, uint64_t caps)
{
	return caps_count_here(req, caps, CAP_SYS_RESOURCE);
}

bool ufs_caller_has_resource(const struct ufs_req *req)
{
	return ufs_caller_capable(req, CAP_SYS_RESOURCE);
}
