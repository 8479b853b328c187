// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which transport serves the connection, starting it, and stopping it:
 * io_uring with a /dev/fuse reader beside it, or /dev/fuse alone, and the
 * copy mode that goes with it.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "copy.h"
#include "coherence.h"
#include "copy_probe.h"
#include "daemon.h"
#include "dev.h"
#include "log.h"
#include "ring_teardown.h"
#include "transport.h"
#include "uring.h"

static int start_dev_workers(struct ufs_daemon *d)
{
	/*
	 * A long wait over /dev/fuse keeps only a helper thread: allow as
	 * many as io_uring queues of queue_depth would (seven eighths each),
	 * not one per caller.
	 */
	d->fs.waits.max = d->nworkers * (d->cfg.queue_depth - d->cfg.queue_depth / 8);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		int fd = ufs_dev_clone(d->fuse_fd);
		int ret;

		/* A predecessor's clone may hold requests it read: keep reading it. */
		if (i < d->handover.inherit.ndev && d->handover.inherit.dev_fds[i] >= 0) {
			if (fd >= 0)
				close(fd);
			fd = d->handover.inherit.dev_fds[i];
			d->handover.inherit.dev_fds[i] = -1;
		}
		if (fd < 0)
			return fd;
		__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
		ret = ufs_dev_worker_start(&d->workers[i], fd);
		if (ret) {
			__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
	}
	return 0;
}

/*
 * How copy_file_range will run.  The ring opcode needs the io_uring
 * transport and a kernel that passes the self-test.  Returns 0, or
 * -EOPNOTSUPP when copy_file_range=ring cannot be honoured.
 */
static int copy_mode_choose(struct ufs_daemon *d, bool ring_transport)
{
	const char *why = "the io_uring transport is not in use";
	bool ring_ok = false;
	int want = d->cfg.copy_file_range;

	if (ring_transport && (want == UFS_CFR_AUTO || want == UFS_CFR_RING))
		ring_ok = !ufs_copy_ring_selftest(&why);
	if (want == UFS_CFR_RING && !ring_ok) {
		ufs_err("copy_file_range=ring, but %s", why);
		return -EOPNOTSUPP;
	}
	d->fs.copies.mode = ufs_copy_mode_resolve(want, ring_ok);
	d->cfr_why = ring_ok || want != UFS_CFR_AUTO ? NULL : why;	/* for --stats */
	if (ring_transport && !ring_ok && want == UFS_CFR_AUTO)
		ufs_info("copy_file_range: %s (no ring opcode: %s)",
			 ufs_cfr_mode_name(d->fs.copies.mode), why);
	else
		ufs_info("copy_file_range: %s", ufs_cfr_mode_name(d->fs.copies.mode));
	return 0;
}

/* The io_uring transport with a /dev/fuse reader beside it, or /dev/fuse alone. */
int ufs_transport_start(struct ufs_daemon *d)
{
	int ret, fd;

	d->queue_mode = UFS_QUEUE_NONE;
	d->zero_copy_state = UFS_ZC_OFF;
	if (d->conn.uring) {
		/* Decided before the first request can arrive, and again if the ring fails. */
		ret = copy_mode_choose(d, true);
		if (ret)
			return ret;
		ret = ufs_uring_start(d);
		if (!ret) {
			d->transport = UFS_TRANSPORT_URING;
			fd = ufs_dev_clone(d->fuse_fd);
			if (fd < 0)
				return fd;
			__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
			ret = ufs_dev_worker_start(&d->dev_reader, fd);
			if (ret)
				__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
		if (ret != -EAGAIN || d->cfg.io_uring == UFS_SWITCH_ON ||
		    d->cfg.zero_copy == UFS_SWITCH_ON)
			return ret == -EAGAIN ? -EOPNOTSUPP : ret;
		/* The ring never became ready: the kernel serves the connection over /dev/fuse. */
		ufs_warn("transport: io_uring=off:setup-failed, serving over /dev/fuse");
	} else if (d->conn.uring_off_reason) {
		ufs_info("transport: io_uring=off:%s", d->conn.uring_off_reason);
	}
	d->transport = UFS_TRANSPORT_DEV;
	ret = copy_mode_choose(d, false);
	if (ret)
		return ret;
	return start_dev_workers(d);
}

/*
 * Without fusectl, end the connection the other way: the kernel aborts it
 * when its last /dev/fuse descriptor closes.  Each worker is woken from
 * its blocking read, sees "stopping", and closes its descriptor.
 */
void ufs_transport_force_stop(struct ufs_daemon *d)
{
	/* Lock waits and copies reply through the workers: let them finish first. */
	ufs_wait_idle(&d->fs.waits);
	ufs_copy_wait_idle(&d->fs.copies);
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		if (d->workers[i].started)
			pthread_kill(d->workers[i].thread, UFS_WORKER_WAKE_SIGNAL);
	}
	if (d->dev_reader.started)
		pthread_kill(d->dev_reader.thread, UFS_WORKER_WAKE_SIGNAL);
	if (d->uring)
		ufs_uring_force_stop(d);
}

void ufs_transport_stop(struct ufs_daemon *d)
{
	/* Helper threads reply through the transports: they finish first. */
	ufs_wait_idle(&d->fs.waits);
	ufs_copy_wait_idle(&d->fs.copies);
	for (unsigned int i = 0; i < d->workers_alloc; i++)
		ufs_copy_lane_free(&d->workers[i]);
	if (d->uring)
		ufs_uring_stop(d);
	for (unsigned int i = 0; i < d->nworkers; i++)
		ufs_dev_worker_join(&d->workers[i]);
	ufs_dev_worker_join(&d->dev_reader);
}

/* Wait for the workers that did start, after the mount was taken away. */
void ufs_transport_abandon(struct ufs_daemon *d)
{
	ufs_unmount(&d->mnt);
	while (__atomic_load_n(&d->workers_running, __ATOMIC_ACQUIRE) > 0) {
		uint64_t v;

		if (read(d->event_fd, &v, sizeof(v)) < 0 && errno != EINTR)
			break;
	}
	ufs_transport_stop(d);
}

/* ---- hand-over (handover_socket.c) ---- */

/* Wake every worker to look at the pause state: a signal stops a read(2), an eventfd a ring. */
static void nudge_workers(void *arg)
{
	struct ufs_daemon *d = arg;

	if (d->transport == UFS_TRANSPORT_URING) {
		ufs_uring_force_stop(d);
	} else {
		for (unsigned int i = 0; i < d->nworkers; i++) {
			if (d->workers[i].started)
				pthread_kill(d->workers[i].thread, UFS_WORKER_WAKE_SIGNAL);
		}
	}
	if (d->dev_reader.started)
		pthread_kill(d->dev_reader.thread, UFS_WORKER_WAKE_SIGNAL);
}

static unsigned int workers_started(const struct ufs_daemon *d)
{
	unsigned int n = d->dev_reader.started;

	for (unsigned int i = 0; i < d->nworkers; i++)
		n += d->workers[i].started;
	return n;
}

int ufs_transport_pause(struct ufs_daemon *d, int timeout_ms, char *why, size_t why_len)
{
	int ret;

	/*
	 * The coherence watcher first, stopped between notifications while the
	 * workers still serve: a notification can wait on an inode lock that
	 * only a served request frees.
	 */
	ufs_coherence_hold(&d->fs.coherence);
	if (!ufs_serve_state_set(&d->pause, UFS_SERVE_PAUSED)) {
		ufs_coherence_release(&d->fs.coherence);
		snprintf(why, why_len, "another take-over is in progress");
		return -EBUSY;
	}
	ret = ufs_pause_wait(&d->pause, false, workers_started(d), timeout_ms, nudge_workers, d);
	if (ret) {
		ufs_transport_resume(d);
		snprintf(why, why_len, "workers still busy after %d ms", timeout_ms);
	}
	return ret;
}

void ufs_transport_resume(struct ufs_daemon *d)
{
	ufs_coherence_release(&d->fs.coherence);
	ufs_serve_state_set(&d->pause, UFS_SERVING);
	nudge_workers(d);	/* rings serve what came meanwhile */
}

void ufs_transport_handed_over(struct ufs_daemon *d)
{
	ufs_serve_state_set(&d->pause, UFS_SERVE_HANDED_OVER);
	/* Each ring lets the kernel's pending deliveries land before the process goes. */
	if (ufs_pause_wait(&d->pause, true, workers_started(d), 5000, nudge_workers, d))
		ufs_warn("take-over: workers did not all stop within 5 s");
}

unsigned int ufs_transport_clone_fds(struct ufs_daemon *d, int *fds, unsigned int max)
{
	unsigned int n = 0;

	if (d->transport != UFS_TRANSPORT_DEV)
		return 0;	/* the ring's /dev/fuse reader answers nothing: no request waits there */
	for (unsigned int i = 0; i < d->nworkers && n < max; i++) {
		int fd = ufs_dev_worker_fd(&d->workers[i]);

		if (fd >= 0)
			fds[n++] = fd;
	}
	return n;
}

/*
 * A successor, once nobody else reads the connection: the kernel sends
 * again every request a predecessor read and never answered (they come
 * back with FUSE_UNIQUE_RESEND in their unique), and the predecessor's
 * clones this daemon did not take can go.
 */
unsigned int ufs_transport_ring_fds(struct ufs_daemon *d, int *fds, unsigned int max)
{
	return d->transport == UFS_TRANSPORT_URING ? ufs_uring_mem_fds(d, fds, max) : 0;
}

int ufs_transport_resend(struct ufs_daemon *d)
{
	int ret = 0;

	/* The ring's held requests come back by adoption: RESEND covers /dev/fuse's lists. */
	if (d->transport == UFS_TRANSPORT_URING)
		ret = ufs_uring_adopt(d);
	else
		ret = ufs_dev_write_notify(d->fuse_fd, FUSE_NOTIFY_RESEND, NULL, 0);

	for (unsigned int i = 0; i < d->handover.inherit.ndev; i++) {
		if (d->handover.inherit.dev_fds[i] >= 0) {
			close(d->handover.inherit.dev_fds[i]);
			d->handover.inherit.dev_fds[i] = -1;
		}
	}
	return ret;
}
