// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's parts made at start-up: SOURCE's file system with its
 * upcalls (stale attributes go to the kernel, the control file's text comes
 * from the stats), the export store, the workers' slots and CPUs.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "daemon.h"
#include "daemon_start.h"
#include "dev.h"
#include "fs_setup.h"
#include "inode_prune.h"
#include "log.h"
#include "stats.h"

/*
 * The kernel's cached attributes of nodeid are stale: FUSE_NOTIFY_INVAL_INODE
 * with a negative offset drops the attributes and ACLs only, and takes no
 * inode lock, so it is safe while the request that changed them is in
 * flight (fs/fuse/inode.c: fuse_reverse_inval_inode).
 */
static void attr_stale(void *arg, uint64_t nodeid)
{
	struct ufs_daemon *d = arg;
	struct fuse_notify_inval_inode_out out = { .ino = nodeid, .off = -1, .len = 0 };
	int ret = ufs_dev_write_notify(d->fuse_fd, FUSE_NOTIFY_INVAL_INODE, &out, sizeof(out));

	/* ENOENT: the kernel has forgotten the inode, nothing is cached. */
	if (ret && ret != -ENOENT)
		ufs_log_once(UFS_LOG_WARN, "invalidating cached attributes: %s", strerror(-ret));
}

/*
 * Whoever may hold a RELEASE (fs.h: await_release): every worker, and
 * io_uring's reader of /dev/fuse.  A caller's requests from one CPU are on
 * one ring queue, served in order, but a caller can move between its
 * close() and its unlink().
 */
static bool await_release(void *arg, uint64_t nodeid, bool (*enough)(void *), void *enough_arg,
			  unsigned int timeout_ms)
{
	struct ufs_daemon *d = arg;
	uint64_t deadline = ufs_monotonic_ns() + (uint64_t)timeout_ms * 1000000u;

	if (!ufs_workers_await(d->workers, d->nworkers, nodeid, enough, enough_arg, deadline))
		return false;
	return ufs_workers_await(&d->dev_reader, 1, nodeid, enough, enough_arg, deadline);
}

/* The coherence watcher's notifications (coherence.c), on its thread only. */
static int coherence_notify(void *arg, int code, const void *payload, size_t len)
{
	struct ufs_daemon *d = arg;

	return ufs_dev_write_notify(d->fuse_fd, code, payload, len);
}

/*
 * Once the connection is up, before the first request: the coherence
 * watcher, and with it the timeouts replies carry.  A successor's watcher
 * first invalidates everything: the changes between its predecessor's
 * last event and its own watch were seen by neither.
 */
int ufs_daemon_cache_start(struct ufs_daemon *d, bool inherited)
{
	return ufs_coherence_start(&d->fs.coherence, d->conn.minor, inherited, coherence_notify, d);
}

/*
 * FUSE_NOTIFY_PRUNE, from the pruner's own thread (inode_prune.c): the
 * kernel may take inode and dentry locks for it, so never from a handler.
 */
static int prune_notify(void *arg, const void *body, size_t len)
{
	struct ufs_daemon *d = arg;

	return ufs_dev_write_notify(d->fuse_fd, FUSE_NOTIFY_PRUNE, body, len);
}

/*
 * The bound on the inode store, once the connection says whether the kernel
 * takes PRUNE (7.45).  UFS_DEBUG_NO_PRUNE (tests) makes it act as an older
 * kernel would.  Not a reason to stop serving when it fails.
 */
void ufs_daemon_prune_start(struct ufs_daemon *d)
{
	bool can = d->conn.minor >= 45 && !getenv("UFS_DEBUG_NO_PRUNE");
	int ret = ufs_inode_prune_start(&d->fs.prune, &d->fs.inodes, d->cfg.inode_limit, can,
					prune_notify, d);

	if (ret)
		ufs_warn("inode_limit: no pruner thread (%s): the inode store is not bounded",
			 strerror(-ret));
	else if (d->cfg.inode_limit && !can)
		ufs_info("inode_limit %u: the kernel has no FUSE_NOTIFY_PRUNE (protocol 7.%u): "
			 "replies carry no timeouts while over it",
			 d->cfg.inode_limit, d->conn.minor);
}

void ufs_daemon_prune_stop(struct ufs_daemon *d)
{
	ufs_inode_prune_stop(&d->fs.prune);
}

/*
 * Before the mount goes: unmounting closes the connection's descriptor
 * (fuse_session_unmount), whose number a later open may be given, so the
 * threads that write notifications to it stop writing first: the pruner
 * ends, the watcher is held (it finishes the notification it writes: the
 * workers still serve) until ufs_coherence_stop.
 */
void ufs_daemon_notifiers_quiesce(struct ufs_daemon *d)
{
	ufs_daemon_prune_stop(d);
	ufs_coherence_hold(&d->fs.coherence);
}

static char *control_snapshot(void *arg, bool all, uid_t uid, size_t *len)
{
	return ufs_stats_text(arg, all, uid, len);
}

/* SOURCE opened, with the upcalls of its file system wired to this daemon. */
int ufs_daemon_fs_open(struct ufs_daemon *d)
{
	int ret = ufs_fs_init(&d->fs, &d->cfg, d->source);

	if (ret)
		return ret;
	d->fs.conn = &d->conn;
	d->fs.noatime = d->mount_opts.noatime;
	d->fs.nodiratime = d->mount_opts.nodiratime;
	d->fs.suid = d->mount_opts.suid;
	d->fs.control_snapshot = control_snapshot;
	d->fs.attr_stale = attr_stale;
	d->fs.await_release = await_release;
	d->fs.upcall_arg = d;
	return 0;
}

/*
 * The export store (export_store=DIR, store.h), opened before the mount: a
 * DIR that is not safe to use stops the start.  Without handles or export
 * records there is nothing to keep.
 */
int ufs_daemon_store_open(struct ufs_daemon *d)
{
	char why[PATH_MAX + 128];
	int ret;

	if (!d->cfg.export_store[0])
		return 0;
	if (!d->fs.inodes.handles.usable || !d->fs.inodes.exports.limit) {
		ufs_warn("export_store: %s: file handles will not outlive this daemon",
			 !d->fs.inodes.handles.usable ? "SOURCE gives no file handles (inode_handles)"
						      : "export_support is off or export_inodes is 0");
		return 0;
	}
	ret = ufs_store_open(&d->store, d->cfg.export_store, d->fs.confine.root_fd,
			     d->fs.inodes.exports.limit, why, sizeof(why));
	if (ret == -EBUSY) {
		/* Not a reason to stop the start: this mount just keeps no handles. */
		ufs_warn("export_store refused, file handles will not outlive this daemon: %s",
			 why);
		return 0;
	}
	if (ret) {
		ufs_err("export_store: %s", why);
		return ret;
	}
	return 0;
}

/*
 * After a predecessor's record (which wins: it is newer), before the first
 * request: the store's node ids become export records, and node ids from
 * now on carry this daemon's generation.  A successor opens the store only
 * now, and cannot refuse to serve for it.
 */
void ufs_daemon_store_load(struct ufs_daemon *d, bool inherited)
{
	struct ufs_store *s = &d->store;
	unsigned int kept = 0;
	uint64_t gen;

	if (inherited && ufs_daemon_store_open(d))
		ufs_warn("export store: not kept by this daemon (see above)");
	gen = s->fd >= 0 ? s->generation : ufs_store_random_generation();

	for (size_t i = 0; i < s->nloaded; i++) {
		if (!ufs_inode_restore(&d->fs.inodes, 0, &s->loaded[i]))
			kept++;
	}
	if (s->fd >= 0) {
		d->fs.inodes.store = s;
		ufs_info("export store %s: %u node ids of earlier daemons kept, generation %llu",
			 d->cfg.export_store, kept, (unsigned long long)gen);
	}
	ufs_store_loaded_free(s);
	ufs_inode_restore_done(&d->fs.inodes, gen << UFS_STORE_GEN_SHIFT | (FUSE_ROOT_ID + 1));
}

/* The workers' slots and CPUs, before any starts. */
static unsigned int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? n : 1;
}

int ufs_daemon_workers_alloc(struct ufs_daemon *d)
{
	unsigned int n = d->cfg.workers ? d->cfg.workers : online_cpus();
	int cpu = -1;

	d->workers = calloc(n, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	d->nworkers = n;
	d->workers_alloc = n;
	if (d->cfg.cpu_count)
		d->cpus = d->cfg.cpu_set;
	else if (sched_getaffinity(0, sizeof(d->cpus), &d->cpus))
		CPU_ZERO(&d->cpus);	/* unknown: helper threads keep what they inherit */
	for (unsigned int i = 0; i < n; i++) {
		struct ufs_worker *w = &d->workers[i];

		w->id = i;
		w->daemon = d;
		w->pause = &d->pause;
		w->cpus = &d->cpus;
		w->cpu = -1;
		if (d->cfg.cpu_count) {
			/* Round-robin over the configured CPUs. */
			do {
				cpu = (cpu + 1) % UFS_CPUS_MAX;
			} while (!CPU_ISSET(cpu, &d->cfg.cpu_set));
			w->cpu = cpu;
		}
	}
	d->dev_reader.daemon = d;
	d->dev_reader.pause = &d->pause;
	d->dev_reader.cpus = &d->cpus;
	d->dev_reader.id = n;
	d->dev_reader.cpu = -1;
	return 0;
}
