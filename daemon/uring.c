// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE-over-io_uring transport.
 *
 * The kernel has one queue per possible CPU and puts a request on the queue
 * of the CPU its caller runs on.  uringfs spreads those queues over W
 * workers; each worker owns one io_uring (128-byte SQEs, as every FUSE
 * command needs) and the entries of its queues.  An entry is a command the
 * kernel holds until it has a request for it: REGISTER first, then
 * COMMIT_AND_FETCH, which answers one request and waits for the next.  The
 * backing-file I/O of READ, WRITE, FSYNC and FALLOCATE goes on the same
 * ring, so one slow request never holds up the others of a worker.
 *
 * Kernels with FUSE_HAS_IO_URING_BUFPOOL (7.3) get ADD_QUEUE and a buffer
 * pool per queue; older ones (6.14-7.2) a payload buffer per entry.
 *
 * Rules of the kernel this file keeps (see shared/docs/kernel-fuse-uring.md):
 *  - a failed REGISTER disables io_uring for the connection, and on a live
 *    ring turns every later commit into -EOPNOTSUPP: every argument is
 *    checked, and all rings and buffers exist, before the first REGISTER;
 *  - every possible CPU needs a registered entry before the ring is ready,
 *    and until then ordinary requests block in the kernel;
 *  - requests that expect no reply (a forced FORGET) must still be committed;
 *  - INIT, FORGET, BATCH_FORGET, INTERRUPT and notifications stay on
 *    /dev/fuse (dev.c keeps one reader for them);
 *  - on unmount every entry the kernel holds completes with -ENOTCONN.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "dev.h"
#include "log.h"
#include "ring_keep.h"
#include "ring_register.h"
#include "ring_serve.h"
#include "ring_setup.h"
#include "ring_teardown.h"
#include "uring.h"

bool ufs_uring_supported(void)
{
	struct io_uring ring;
	struct io_uring_probe *probe;
	bool ok;

	if (io_uring_queue_init(4, &ring, IORING_SETUP_SQE128))
		return false;
	probe = io_uring_get_probe_ring(&ring);
	ok = probe && io_uring_opcode_supported(probe, IORING_OP_URING_CMD);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	return ok;
}

int ufs_uring_inherit_map(struct ufs_daemon *d, char *why, size_t why_len)
{
	struct ufs_inherit *in = &d->handover.inherit;
	struct ufs_uring probe = { 0 };
	int ret;

	if (!in->nring || in->ring_mapped || in->from == UFS_INHERIT_NONE)
		return 0;
	ret = uring_old_map(&probe, in->ring_fds, in->nring, why, why_len);
	if (ret) {
		for (unsigned int i = 0; i < probe.nold; i++)
			munmap(probe.old[i].base, probe.old[i].len);
		free(probe.old);
		return ret;
	}
	/* Kept mapped; ufs_uring_start maps nothing twice (MAP_FIXED_NOREPLACE). */
	free(probe.old);
	in->ring_mapped = true;
	return 0;
}

/* The predecessor's memory files, already mapped where they were: the transport's now. */
static int uring_old_take(struct ufs_uring *u, struct ufs_inherit *in)
{
	u->old = calloc(in->nring ? in->nring : 1, sizeof(*u->old));
	if (!u->old)
		return -ENOMEM;
	for (unsigned int i = 0; i < in->nring; i++) {
		struct ring_mem_header h;
		struct ring_old *o = &u->old[u->nold];

		if (pread(in->ring_fds[i], &h, sizeof(h), 0) != sizeof(h))
			return -EIO;
		o->fd = in->ring_fds[i];
		o->base = (uint8_t *)(uintptr_t)h.base;
		o->len = h.len;
		o->h = (const void *)o->base;
		o->is_adopted = calloc(h.nents ? h.nents : 1, sizeof(*o->is_adopted));
		in->ring_fds[i] = -1;
		u->nold++;
	}
	in->nring = 0;
	return 0;
}

static int uring_spawn(struct ufs_uring *u)
{
	struct ufs_daemon *d = u->d;

	for (unsigned int i = 0; i < u->nrws; i++) {
		struct ring_worker *rw = &u->rws[i];
		int ret;

		rw->fuse_fd = ufs_dev_clone(d->fuse_fd);
		if (rw->fuse_fd < 0)
			return rw->fuse_fd;
		rw->w->xpriv = rw;
		rw->w->batched = true;
		__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
		ret = -pthread_create(&rw->w->thread, NULL, ring_worker_main, rw);
		if (ret) {
			__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
		rw->w->started = true;
	}
	return 0;
}

/*
 * What zero copy came to, for the stats and the log; with zero_copy=on,
 * anything but every queue on is a start-up error.
 */
static int uring_zero_copy_state(struct ufs_uring *u)
{
	struct ufs_daemon *d = u->d;
	unsigned int on = 0;

	for (unsigned int i = 0; i < u->nrws; i++) {
		for (unsigned int k = 0; k < u->rws[i].nqueues; k++)
			on += u->rws[i].queues[k].owner && u->rws[i].queues[k].zero_copy;
	}
	if (!u->zc_wanted)
		d->zero_copy_state = UFS_ZC_OFF;
	else if (on == u->nr_queues)
		d->zero_copy_state = UFS_ZC_ON;
	else
		d->zero_copy_state = u->zc_refused == -EPERM ? UFS_ZC_EPERM : UFS_ZC_EINVAL;
	d->fs.zero_copy = on > 0;
	d->zc_queues = on;
	d->nr_queues = u->nr_queues;
	if (!u->zc_wanted && d->cfg.zero_copy != UFS_SWITCH_OFF)
		ufs_info("zero copy: off (the kernel has no FUSE-over-io_uring buffer pools, Linux 7.3)");
	else if (!u->zc_wanted && d->cfg.io_path != UFS_IO_PATH_AUTO)
		ufs_info("zero copy: off (io_path=%s)", ufs_io_path_name(d->cfg.io_path));
	else if (on && on == u->nr_queues)
		ufs_info("zero copy: on (%u queues)", on);
	else if (u->zc_wanted)
		ufs_log(d->cfg.zero_copy == UFS_SWITCH_ON ? UFS_LOG_ERR : UFS_LOG_WARN,
			"zero copy: refused by the kernel with %s%s; queues copy instead",
			u->zc_refused == -EPERM ? "EPERM" : "EINVAL",
			u->zc_refused == -EPERM ? " (needs CAP_SYS_ADMIN)" : "");
	if (d->cfg.zero_copy == UFS_SWITCH_ON && on != u->nr_queues)
		return -EOPNOTSUPP;
	return 0;
}

/* Give up before any REGISTER: the kernel must be told, or requests block forever. */
static int uring_abandon(struct ufs_uring *u)
{
	int ret;

	uring_setup_set_phase(u, SETUP_ABANDON);
	uring_join(u);
	/*
	 * A successor's connection is on its ring for good: nothing to hand
	 * back (a failing REGISTER would wedge it), and the predecessor's
	 * entries still hold what they hold.
	 */
	if (u->inherited) {
		uring_free(u);
		return -EIO;
	}
	ret = uring_force_dev_fallback(u->d->fuse_fd);
	if (ret)
		ufs_err("io_uring: cannot hand the connection back to /dev/fuse: %s",
			strerror(-ret));
	uring_free(u);
	return ret ? ret : -EAGAIN;
}

/*
 * The connection ended while the entries registered (unmounted, or
 * aborted): nothing to hand back to /dev/fuse, as nobody can use the
 * connection any more.  The caller decides what that means (main.c).
 */
static int uring_conn_gone(struct ufs_uring *u)
{
	uring_setup_set_phase(u, SETUP_ABANDON);
	uring_join(u);
	uring_free(u);
	return -ENOTCONN;
}

static void describe_transport(struct ufs_daemon *d, struct ufs_uring *u, bool uring)
{
	d->transport = uring ? UFS_TRANSPORT_URING : UFS_TRANSPORT_DEV;
	d->nworkers = uring ? u->nrws : d->workers_alloc;
	d->queue_mode = !uring ? UFS_QUEUE_NONE :
			u->bufpool ? UFS_QUEUE_BUFPOOL : UFS_QUEUE_PER_ENTRY;
}

/*
 * Build the rings and register every entry, in the order that keeps a
 * failure harmless for as long as possible (see enum uring_setup_phase).
 * Returns 0 serving, -EAGAIN if the kernel now serves /dev/fuse instead,
 * -ENOTCONN if the connection ended meanwhile (unmounted or aborted: not
 * logged), or another error: then the connection may be wedged and must end.
 */
int ufs_uring_start(struct ufs_daemon *d)
{
	struct ufs_uring *u;
	int ret;

	ret = uring_alloc(d, &u);
	if (ret) {
		int fb = d->handover.inherit.from ? -EIO : uring_force_dev_fallback(d->fuse_fd);

		return fb ? fb : -EAGAIN;
	}
	if (d->handover.inherit.from != UFS_INHERIT_NONE) {
		u->inherited = true;
		ret = uring_old_take(u, &d->handover.inherit);
		if (ret) {
			uring_free(u);
			return -EIO;
		}
		/* Queues added with zero copy keep it: their opens' requests still come so. */
		u->zc_wanted = false;
		for (unsigned int i = 0; i < u->nold; i++) {
			for (unsigned int k = 0; k < u->old[i].h->npools; k++)
				u->zc_wanted |= u->old[i].h->pools[k].zero_copy;
		}
	}
	ret = uring_assign_queues(u);
	if (!ret)
		ret = uring_spawn(u);
	uring_setup_wait_count(u, &u->reported, uring_started_workers(u));
	if (!ret && !u->error) {
		uring_share_queues(u);
		ret = uring_zero_copy_state(u);
	}
	if (!ret && ring_conn_ended(u->error))
		return uring_conn_gone(u);	/* unmounted during ADD_QUEUE (7.3) */
	if (ret || u->error)
		return uring_abandon(u);

	/* Requests may flow as soon as the key queue registers: describe the transport first. */
	describe_transport(d, u, true);
	ret = uring_setup_run_phase(u, SETUP_REGISTER_MOST);
	if (!ret)
		ret = uring_setup_run_phase(u, SETUP_REGISTER_KEY);
	if (ret) {
		/* The ring never became ready: the kernel can still serve /dev/fuse. */
		describe_transport(d, u, false);
		return ring_conn_ended(ret) ? uring_conn_gone(u) : uring_abandon(u);
	}
	ret = uring_setup_run_phase(u, SETUP_REGISTER_REST);
	if (ring_conn_ended(ret)) {
		describe_transport(d, u, false);
		return uring_conn_gone(u);
	}
	if (ret) {
		ufs_err("io_uring: a REGISTER failed on the ready ring (%s): the connection "
			"cannot be served and must end", strerror(-ret));
		uring_setup_set_phase(u, SETUP_ABANDON);
		uring_join(u);
		uring_free(u);
		describe_transport(d, u, false);
		return -EIO;
	}
	uring_setup_set_phase(u, SETUP_SERVE);
	d->uring = u;
	if (u->inherited)
		ufs_info("io_uring: registered %u entries beside the predecessor's on its live "
			 "connection", u->nrws ? u->nr_queues * (u->depth + RING_RESERVE) : 0);
	/* pool_buffers: bufpool_buffers as taken, shown where it takes effect. */
	ufs_info("transport: io_uring=on queues=%u workers=%u depth=%u+%u queue_mode=%s "
		 "payload=%zu%s%.0u", u->nr_queues, u->nrws, u->depth, RING_RESERVE,
		 ufs_queue_mode_name(d->queue_mode),
		 u->max_payload, u->bufpool ? " pool_buffers=" : "", u->bufpool ? u->pool_bufs : 0);
	return 0;
}

int ufs_uring_adopt(struct ufs_daemon *d)
{
	struct ufs_uring *u = d->uring;
	unsigned int n, kept = 0;

	if (!u)
		return -ENOTCONN;
	n = uring_adopt(u);
	/* Requests that waited for an entry while nobody served go to the first commit. */
	uring_kick_queues(u, d->mnt.real);
	kept = u->nold;
	uring_old_trim(u);
	ufs_info("io_uring: %u requests the predecessor's entries held taken over; %u of its "
		 "%u ring memory files still in use", n, u->nold, kept);
	return 0;
}

unsigned int ufs_uring_mem_fds(struct ufs_daemon *d, int *fds, unsigned int max)
{
	struct ufs_uring *u = d->uring;
	unsigned int n = 0;

	if (!u)
		return 0;
	for (unsigned int i = 0; i < u->nrws && n < max; i++) {
		if (u->rws[i].mem_fd >= 0)
			fds[n++] = u->rws[i].mem_fd;
	}
	/* A predecessor's file lives on while the kernel has an entry or a pool in it. */
	for (unsigned int i = 0; i < u->nold && n < max; i++) {
		if (u->old[i].adopted || u->old[i].h->npools)
			fds[n++] = u->old[i].fd;
	}
	return n;
}
