// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store's file handles (inode_handles): an inode with a handle
 * (name_to_handle_at) can give up its O_PATH descriptor and be reopened by
 * open_by_handle_at, which needs a descriptor on the handle's mount.  One
 * is kept per mount met, found once: the first directory met on it (its
 * root, in practice), or for a predecessor's record the mount's path in
 * /proc/self/mountinfo.
 *
 * The slow part (the open, reading mountinfo) runs without any lock; the
 * table is only searched and filled under its own lock.  Two threads that
 * meet a new mount at once both open it: the first to insert wins, the
 * other closes its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "config.h"
#include "confine.h"
#include "inode_handle.h"
#include "lockdep.h"
#include "log.h"

#define MOUNT_FDS_MAX (sizeof(((struct ufs_handles *)0)->mount_fds) / sizeof(struct ufs_mount_fd))

void ufs_inode_handles_setup(struct ufs_handles *h, const struct ufs_config *cfg,
			     const struct ufs_confine *confine)
{
	memset(h, 0, sizeof(*h));
	h->cfg = cfg;
	h->confine = confine;
	pthread_mutex_init(&h->lock, NULL);
}

void ufs_inode_handles_destroy(struct ufs_handles *h)
{
	for (unsigned int i = 0; i < h->nmount_fds; i++)
		close(h->mount_fds[i].fd);
	h->nmount_fds = 0;
	pthread_mutex_destroy(&h->lock);
}

/* Under lock: the known descriptor of mount_id, or -1. */
static int mount_fd_find_locked(struct ufs_handles *h, int mount_id)
{
	UFS_ASSERT_HELD(&h->lock);
	for (unsigned int i = 0; i < h->nmount_fds; i++) {
		if (h->mount_fds[i].mount_id == mount_id)
			return h->mount_fds[i].fd;
	}
	return -1;
}

/* A mount below SOURCE the predecessor met: any file on it will do. */
static int mount_open_by_id(int mount_id)
{
	char *line = NULL, path[PATH_MAX];
	size_t cap = 0;
	int id, fd = -1;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	while (f && getline(&line, &cap, f) > 0) {
		if (sscanf(line, "%d %*d %*s %*s %4095s", &id, path) == 2 && id == mount_id) {
			fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			break;
		}
	}
	free(line);
	if (f)
		fclose(f);
	return fd;
}

/*
 * A descriptor open_by_handle_at accepts for the mount mount_id (not
 * O_PATH): known, or opened now, through fd (a directory on that mount)
 * if fd >= 0, else by the mount's path.  -1 if there is none (the table
 * is full, fd is no directory, the mount is gone).  The one lookup of the
 * table; nothing blocks under its lock.
 */
static int mount_fd_get(struct ufs_handles *h, int mount_id, int fd, mode_t type)
{
	char name[32];
	int mfd, known;
	bool full;

	pthread_mutex_lock(&h->lock);
	known = mount_fd_find_locked(h, mount_id);
	full = h->nmount_fds == MOUNT_FDS_MAX;
	pthread_mutex_unlock(&h->lock);
	if (known >= 0)
		return known;
	if (full)
		return -1;
	if (fd >= 0) {
		/* The first object met on a new mount is its root directory, in practice. */
		if (type != S_IFDIR)
			return -1;
		snprintf(name, sizeof(name), "%d", fd);
		mfd = openat(h->confine->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	} else {
		mfd = mount_open_by_id(mount_id);
	}
	if (mfd < 0)
		return -1;

	pthread_mutex_lock(&h->lock);
	known = mount_fd_find_locked(h, mount_id);
	if (known < 0 && h->nmount_fds < MOUNT_FDS_MAX) {
		h->mount_fds[h->nmount_fds].mount_id = mount_id;
		h->mount_fds[h->nmount_fds].fd = mfd;
		h->nmount_fds++;
		known = mfd;
		mfd = -1;
	}
	pthread_mutex_unlock(&h->lock);
	if (mfd >= 0)
		close(mfd);	/* another thread's is in, or the table filled meanwhile */
	return known;
}

/* A descriptor on the mount with this id, for open_by_handle_at: known, or found. */
int ufs_inode_handle_mount_fd(struct ufs_handles *h, int mount_id)
{
	return mount_fd_get(h, mount_id, -1, 0);
}

/*
 * Give a fresh inode (fd, of type) a handle: *handle (malloc'ed), the
 * descriptor of its mount and its mount id.  Without one (*handle NULL,
 * returns 0) it keeps its descriptor for good; with inode_handles=mandatory
 * that is an error instead.
 */
int ufs_inode_handle_make(struct ufs_handles *h, int fd, mode_t type,
			  struct file_handle **handle, int *mount_fd, int *mount_id)
{
	struct file_handle *fh;
	int mid, mfd;

	*handle = NULL;
	if (!h->usable)
		return 0;
	fh = malloc(sizeof(*fh) + MAX_HANDLE_SZ);
	if (!fh)
		return -ENOMEM;
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(fd, "", fh, &mid, AT_EMPTY_PATH)) {
		int e = errno;

		free(fh);
		/* EOPNOTSUPP/EOVERFLOW: this file system cannot, and never will. */
		return h->cfg->inode_handles == UFS_HANDLES_MANDATORY ? -e : 0;
	}
	mfd = mount_fd_get(h, mid, fd, type);
	if (mfd < 0) {
		free(fh);
		return h->cfg->inode_handles == UFS_HANDLES_MANDATORY ? -EOPNOTSUPP : 0;
	}
	*handle = realloc(fh, sizeof(*fh) + fh->handle_bytes) ?: fh;
	*mount_fd = mfd;
	*mount_id = mid;
	return 0;
}

/* Is CAP_DAC_READ_SEARCH among this process's effective capabilities? */
static bool may_read_search(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data))
		return true;	/* unknown: a failure is then worth a warning */
	return data[CAP_TO_INDEX(CAP_DAC_READ_SEARCH)].effective & CAP_TO_MASK(CAP_DAC_READ_SEARCH);
}

/*
 * Can this process use handles on SOURCE?  open_by_handle_at needs
 * CAP_DAC_READ_SEARCH, and the file system must export handles.  An
 * ordinary user's daemon has not the capability by design: that is said
 * at info (syslog once detached) and in --stats, not as a warning.  Root's
 * warns, with or without the capability (a sandbox that took it away, a
 * seccomp filter, a file system without handles).
 */
int ufs_inode_handles_probe(struct ufs_handles *h)
{
	struct file_handle *handle;
	int fd, ret, mount_fd, mount_id;

	if (h->cfg->inode_handles == UFS_HANDLES_NEVER) {
		h->off_reason = "inode_handles=never";
		return 0;
	}
	h->usable = true;
	ret = ufs_inode_handle_make(h, h->confine->root_fd, S_IFDIR, &handle, &mount_fd,
				    &mount_id);
	if (!ret && handle) {
		fd = open_by_handle_at(mount_fd, handle, O_PATH | O_CLOEXEC);
		ret = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	} else if (!ret) {
		ret = -EOPNOTSUPP;
	}
	free(handle);
	if (!ret)
		return 0;
	h->usable = false;
	h->unprivileged = ret == -EPERM && geteuid() && !may_read_search();
	h->off_reason = h->unprivileged ? "no CAP_DAC_READ_SEARCH (an ordinary user)" :
			ret == -EPERM ? "open_by_handle_at: Operation not permitted" :
			ret == -EOPNOTSUPP ? "the source gives no file handles" :
			"file handles failed on the source";
	if (h->cfg->inode_handles == UFS_HANDLES_MANDATORY) {
		ufs_err("inode_handles=mandatory, but file handles do not work here: %s%s",
			strerror(-ret), ret == -EPERM ? " (needs CAP_DAC_READ_SEARCH)" : "");
		return ret;
	}
	if (h->unprivileged)
		ufs_info("inode_handles: no file handles without CAP_DAC_READ_SEARCH: one "
			 "descriptor per inode, at most RLIMIT_NOFILE inodes");
	else
		ufs_warn("inode_handles: file handles unusable (%s): one descriptor per inode, "
			 "at most RLIMIT_NOFILE inodes", strerror(-ret));
	return 0;
}
