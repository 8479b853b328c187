// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The kernel's caches kept coherent with SOURCE: whether it can be had, the
 * watcher thread's life, and the timeouts replies carry (what a change is
 * turned into: coherence_event.c).
 *
 * The kernel keeps the mount's own changes coherent; only changes made
 * beside it (in SOURCE directly, through another mount, by another
 * service) are unknown to it.  fanotify with FAN_MARK_FILESYSTEM reports
 * every change on SOURCE's file system synchronously, from inside the
 * changing system call, with the file handles of the object and its
 * directory and the name.  The watcher turns each into
 * FUSE_NOTIFY_INVAL_ENTRY / FUSE_NOTIFY_INVAL_INODE for the node ids the
 * kernel holds, so names, attributes and failed lookups are cached for
 * long (a day) and still never served stale for longer than the watcher's
 * latency.  Lost events (queue overflow) invalidate everything:
 * FUSE_NOTIFY_INC_EPOCH (7.44) for every cached name, and every inode's
 * attributes and pages.  Without INC_EPOCH there is no correct way to drop
 * every name, so coherence is not offered.
 *
 * fanotify sees every change only where the kernel makes it: on local file
 * systems.  NFS, SMB, ceph and 9p change on the server (other clients'
 * changes raise no event here), a FUSE file system changes in its daemon,
 * and an overlay's layers can be changed beneath it without an event on
 * the overlay.  Those keep the short timeouts.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "coherence.h"
#include "coherence_event.h"
#include "config.h"
#include "inode.h"
#include "linux_abi.h"
#include "log.h"


#define COH_LONG_TIMEOUT 86400.0	/* a day: what "until it changes" is sent as */
#define COH_MIN_MINOR 44		/* FUSE_NOTIFY_INC_EPOCH */
#define COH_HOLD_WAIT_S 5
/*
 * Events come from anything on SOURCE's file system (the mark is the whole
 * file system's).  After a drain that read any, the watcher waits
 * COH_STORM_PAUSE_NS before it looks again, so that during a storm the
 * repeats of one change merge in the kernel's queue (fs/notify/fanotify:
 * fanotify_merge) instead of each costing this thread a read and a
 * lookup.  What a drain read is acted on at once: a change made after it
 * shows through the mount at most that much later.
 */
#define COH_STORM_EVENTS 1
#define COH_STORM_PAUSE_NS 1000000L

const char *ufs_coherence_state_name(enum ufs_coherence_state s)
{
	switch (s) {
	case UFS_COH_UNAVAILABLE:
		return "unavailable";
	case UFS_COH_READY:
		return "ready";
	case UFS_COH_ON:
		return "on";
	case UFS_COH_BROKEN:
		return "broken";
	case UFS_COH_OFF:
		break;
	}
	return "off";
}

void ufs_coherence_init(struct ufs_coherence *c)
{
	memset(c, 0, sizeof(*c));
	c->fan_fd = c->stop_fd = -1;
	c->why = "not set up";
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
}

/* File systems whose every change the kernel here makes, and so reports. */
static const struct {
	long type;
	const char *name;
	const char *refused;	/* why not, or NULL: watched */
} fs_types[] = {
	{ 0xEF53, "ext4", NULL },
	{ 0x58465342, "xfs", NULL },
	{ 0x9123683E, "btrfs", NULL },
	{ 0x01021994, "tmpfs", NULL },
	{ 0xF2F52010, "f2fs", NULL },
	{ 0xCA451A4E, "bcachefs", NULL },
	{ 0x6969, "nfs", "changes by other NFS clients raise no event here" },
	{ 0xFF534D42, "cifs", "changes on the SMB server raise no event here" },
	{ 0xFE534D42, "smb2", "changes on the SMB server raise no event here" },
	{ 0x00C36400, "ceph", "changes by other ceph clients raise no event here" },
	{ 0x01021997, "9p", "changes on the 9p server raise no event here" },
	{ 0x65735546, "fuse", "a FUSE file system changes in its daemon, unseen here" },
	{ 0x794C7630, "overlay", "changes to an overlay's layers raise no event on it" },
};

static const char *fs_refused(struct ufs_coherence *c, int fd)
{
	static char unknown[64];
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return "statfs on SOURCE failed";
	for (size_t i = 0; i < sizeof(fs_types) / sizeof(fs_types[0]); i++) {
		if ((long)sf.f_type != fs_types[i].type)
			continue;
		snprintf(c->fs_name, sizeof(c->fs_name), "%s", fs_types[i].name);
		return fs_types[i].refused;
	}
	snprintf(c->fs_name, sizeof(c->fs_name), "0x%lx", (long)sf.f_type);
	snprintf(unknown, sizeof(unknown),
		 "SOURCE's file system (f_type 0x%lx) is not a known local one", (long)sf.f_type);
	return unknown;
}

static const char *root_handle(struct ufs_coherence *c, int root_fd)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + sizeof(c->root.bytes)];
	} h;
	int mnt_id;

	h.fh.handle_bytes = sizeof(c->root.bytes);
	if (name_to_handle_at(root_fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH)) {
		h.fh.handle_bytes = sizeof(c->root.bytes);
		if (name_to_handle_at(root_fd, "", &h.fh, &mnt_id, AT_EMPTY_PATH | AT_HANDLE_FID))
			return "SOURCE gives no file handles";
	}
	c->root.type = h.fh.handle_type;
	c->root.len = h.fh.handle_bytes;
	memcpy(c->root.bytes, h.fh.f_handle, h.fh.handle_bytes);
	return NULL;
}

static const char *watch_open(struct ufs_coherence *c, int root_fd)
{
	const unsigned int report = FAN_REPORT_DFID_NAME | FAN_REPORT_FID;
	const uint64_t mask = FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO |
			      FAN_ATTRIB | FAN_MODIFY | FAN_CLOSE_WRITE | FAN_DELETE_SELF |
			      FAN_MOVE_SELF | FAN_ONDIR;
	const char *why;

	if ((why = fs_refused(c, root_fd)))
		return why;
	if (!c->inodes->handles.usable)
		return "file handles are unusable on SOURCE (inode_handles)";
	if ((why = root_handle(c, root_fd)))
		return why;
	/* The created, removed or moved object's handle too, where the kernel has it (5.17). */
	c->fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | report |
					  FAN_REPORT_TARGET_FID,
				  O_RDONLY | O_CLOEXEC);
	if (c->fan_fd < 0 && errno == EINVAL)
		c->fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK | report,
					  O_RDONLY | O_CLOEXEC);
	if (c->fan_fd < 0)
		return errno == EPERM ? "fanotify needs CAP_SYS_ADMIN" :
		       errno == EINVAL ? "the kernel's fanotify has no FAN_REPORT_DFID_NAME (5.9)" :
					 "fanotify_init failed";
	if (fanotify_mark(c->fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask, root_fd, ".")) {
		why = errno == EPERM ? "a file system watch needs CAP_SYS_ADMIN" :
		      errno == ENODEV || errno == EXDEV || errno == EOPNOTSUPP ?
					 "fanotify cannot watch SOURCE's file system" :
					 "fanotify_mark failed";
		close(c->fan_fd);
		c->fan_fd = -1;
		return why;
	}
	c->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->stop_fd < 0) {
		close(c->fan_fd);
		c->fan_fd = -1;
		return "out of descriptors";
	}
	return NULL;
}

/* A timeout the user set wins; else long while coherent. */
static void timeouts_set(struct ufs_coherence *c, const struct ufs_config *cfg)
{
	c->off = (struct ufs_cache_timeouts){ cfg->entry_timeout, cfg->attr_timeout,
					      cfg->negative_timeout };
	if (cfg->cache == UFS_CACHE_NONE) {
		c->off.entry = ufs_config_is_set(cfg, "entry_timeout") ? cfg->entry_timeout : 0;
		c->off.attr = ufs_config_is_set(cfg, "attr_timeout") ? cfg->attr_timeout : 0;
		c->off.negative = ufs_config_is_set(cfg, "negative_timeout") ? cfg->negative_timeout : 0;
	}
	c->on.entry = ufs_config_is_set(cfg, "entry_timeout") ? cfg->entry_timeout : COH_LONG_TIMEOUT;
	c->on.attr = ufs_config_is_set(cfg, "attr_timeout") ? cfg->attr_timeout : COH_LONG_TIMEOUT;
	c->on.negative = ufs_config_is_set(cfg, "negative_timeout") ? cfg->negative_timeout :
								       COH_LONG_TIMEOUT;
}

int ufs_coherence_open(struct ufs_coherence *c, const struct ufs_config *cfg,
		       struct ufs_inode_store *inodes, int root_fd, dev_t dev)
{
	const char *why;

	c->policy = cfg->cache;
	c->inodes = inodes;
	c->dev = dev;
	c->self = getpid();
	c->writeback = cfg->writeback_cache;
	timeouts_set(c, cfg);
	if (cfg->cache == UFS_CACHE_TIMEOUT || cfg->cache == UFS_CACHE_NONE) {
		c->state = UFS_COH_OFF;
		c->why = cfg->cache == UFS_CACHE_NONE ? "cache=none" : "cache=timeout";
		return 0;
	}
	why = watch_open(c, root_fd);
	if (!why) {
		c->state = UFS_COH_READY;
		c->why = "fanotify watches SOURCE's file system";
		return 0;
	}
	c->state = UFS_COH_UNAVAILABLE;
	c->why = why;
	if (cfg->cache == UFS_CACHE_COHERENT) {
		ufs_err("cache=coherent: %s", why);
		return -EOPNOTSUPP;
	}
	return 0;
}

static void log_outcome(const struct ufs_coherence *c)
{
	const struct ufs_cache_timeouts *t = c->state == UFS_COH_ON ? &c->on : &c->off;

	ufs_info("cache=%s: %s (%s%s%s): entry_timeout=%g attr_timeout=%g negative_timeout=%g",
		 ufs_cache_policy_name(c->policy),
		 c->state == UFS_COH_ON ? "coherent" : "not coherent, timeouts", c->why,
		 c->fs_name[0] ? ", " : "", c->fs_name, t->entry, t->attr, t->negative);
}

/* ---- the watcher thread ---- */

/* Wait for events or the stop; false: stop. */
static bool watch_wait(struct ufs_coherence *c)
{
	struct pollfd p[2] = { { .fd = c->fan_fd, .events = POLLIN },
			       { .fd = c->stop_fd, .events = POLLIN } };
	bool go;

	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&c->lock);
	while (c->held && !c->stop)
		pthread_cond_wait(&c->cond, &c->lock);
	go = !c->stop;
	c->busy = go;
	pthread_mutex_unlock(&c->lock);
	return go;
}

static void watch_idle(struct ufs_coherence *c)
{
	pthread_mutex_lock(&c->lock);
	c->busy = false;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static void *watcher(void *arg)
{
	struct ufs_coherence *c = arg;
	static char buf[65536] __attribute__((aligned(8)));

	if (c->inherited)
		ufs_coherence_invalidate_all(c, "a predecessor's last changes");
	while (watch_wait(c)) {
		uint64_t before = __atomic_load_n(&c->events, __ATOMIC_RELAXED);
		int ret = ufs_coherence_drain(c, buf, sizeof(buf));

		watch_idle(c);
		if (!ret && __atomic_load_n(&c->events, __ATOMIC_RELAXED) - before >=
				    COH_STORM_EVENTS) {
			struct timespec pause = { 0, COH_STORM_PAUSE_NS };

			nanosleep(&pause, NULL);
		}
		if (ret) {
			/* A read error: nothing says what changed from now on. */
			__atomic_store_n(&c->state, UFS_COH_BROKEN, __ATOMIC_RELEASE);
			c->why = "the fanotify watch failed while serving";
			ufs_warn("cache: the fanotify watch failed (%s): short timeouts from now on",
				 strerror(-ret));
			ufs_coherence_invalidate_all(c, NULL);
			break;
		}
	}
	return NULL;
}

int ufs_coherence_start(struct ufs_coherence *c, uint32_t minor, bool inherited,
			ufs_coherence_notify_fn notify, void *arg)
{
	c->notify = notify;
	c->notify_arg = arg;
	c->self = getpid();	/* after detaching: the serving process */
	c->inherited = inherited;
	if (c->state == UFS_COH_READY && minor < COH_MIN_MINOR) {
		c->state = UFS_COH_UNAVAILABLE;
		c->why = "the kernel has no FUSE_NOTIFY_INC_EPOCH (FUSE 7.44)";
		if (c->policy == UFS_CACHE_COHERENT) {
			ufs_err("cache=coherent: %s", c->why);
			return -EOPNOTSUPP;
		}
	}
	if (c->state == UFS_COH_READY) {
		if (pthread_create(&c->thread, NULL, watcher, c)) {
			c->state = UFS_COH_UNAVAILABLE;
			c->why = "cannot start the watcher thread";
			if (c->policy == UFS_CACHE_COHERENT) {
				ufs_err("cache=coherent: %s", c->why);
				return -EAGAIN;
			}
		} else {
			c->started = true;
			c->state = UFS_COH_ON;
		}
	}
	if (c->state != UFS_COH_ON && c->fan_fd >= 0) {
		close(c->fan_fd);
		c->fan_fd = -1;
	}
	log_outcome(c);
	return 0;
}

bool ufs_coherence_active(const struct ufs_coherence *c)
{
	return __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == UFS_COH_ON;
}

const struct ufs_cache_timeouts *ufs_coherence_timeouts(const struct ufs_coherence *c, dev_t dev)
{
	return dev == c->dev && ufs_coherence_active(c) ? &c->on : &c->off;
}

void ufs_coherence_hold(struct ufs_coherence *c)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += COH_HOLD_WAIT_S;
	pthread_mutex_lock(&c->lock);
	c->held++;
	while (c->busy) {
		if (pthread_cond_timedwait(&c->cond, &c->lock, &until) == ETIMEDOUT) {
			ufs_warn("cache: the watcher is still writing a notification after %d s",
				 COH_HOLD_WAIT_S);
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
}

void ufs_coherence_release(struct ufs_coherence *c)
{
	pthread_mutex_lock(&c->lock);
	if (c->held)
		c->held--;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void ufs_coherence_quiet(struct ufs_coherence *c, int dirfd, const char *path, bool quiet)
{
	/* An inode mark's ignored mask applies to the file system mark's events too. */
	const unsigned int flags = FAN_MARK_IGNORED_MASK | FAN_MARK_IGNORED_SURV_MODIFY |
				   (quiet ? FAN_MARK_ADD : FAN_MARK_REMOVE);

	if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) != UFS_COH_ON)
		return;
	/* ENOENT on removal: no mark was made (a predecessor's writer, a failed add) */
	if (fanotify_mark(c->fan_fd, flags, FAN_MODIFY | FAN_CLOSE_WRITE, dirfd, path) &&
	    (quiet || errno != ENOENT))
		ufs_log_once(UFS_LOG_WARN, "cache: fanotify_mark(%s an ignore mark): %s",
			     quiet ? "add" : "remove", strerror(errno));
}

void ufs_coherence_stop(struct ufs_coherence *c)
{
	uint64_t one = 1;

	if (c->started) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_cond_broadcast(&c->cond);
		pthread_mutex_unlock(&c->lock);
		if (write(c->stop_fd, &one, sizeof(one)) < 0) {
			/* the counter is full: the watcher wakes anyway */
		}
		pthread_join(c->thread, NULL);
		c->started = false;
	}
	if (c->fan_fd >= 0)
		close(c->fan_fd);
	if (c->stop_fd >= 0)
		close(c->stop_fd);
	c->fan_fd = c->stop_fd = -1;
}
