// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The /dev/fuse transport.
 *
 * Each worker owns a descriptor of the connection and a small pool of
 * request slots.  A slot holds the request as read(2) delivered it and a
 * separate, page-aligned reply buffer.  A request whose reply comes later
 * (a lock wait) keeps its slot; the worker takes another one meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "daemon.h"
#include "dev.h"
#include "dispatch.h"
#include "io.h"
#include "log.h"
#include "worker.h"

#define PAGE 4096u
/*
 * WRITE data follows a 40-byte header and a 40-byte fuse_write_in.  Reading
 * each request at this offset into a page-aligned buffer puts the data on a
 * page boundary, which a backing file opened O_DIRECT needs.
 */
#define WRITE_DATA_SKEW (PAGE - sizeof(struct fuse_in_header) - sizeof(struct fuse_write_in))
#define REPLY_MIN (64u << 10)	/* a full xattr list */

struct dev_slot {
	struct ufs_req req;
	struct dev_worker *dw;		/* back pointer */
	struct dev_slot *next_free;
	uint8_t *in;			/* page aligned; the request starts at WRITE_DATA_SKEW */
	size_t in_size;
	void *out;			/* page aligned reply payload */
	size_t out_size;
};

struct dev_worker {
	struct ufs_worker *w;		/* back pointer */
	int fd;
	pthread_mutex_t lock;		/* protects free; a queued reply may come from any thread */
	struct dev_slot *free;
	unsigned int nslots;
};

/* A notification is a reply with unique 0 and the notify code in error. */
int ufs_dev_write_notify(int fd, int code, const void *payload, size_t len)
{
	return ufs_dev_write_reply(fd, 0, code, payload, len);
}

static void dev_reply(struct ufs_req *req, int error, size_t len);
static void dev_io_submit(struct ufs_req *req);

static const struct ufs_transport_ops dev_ops = {
	.name = "dev",
	.reply = dev_reply,
	.io_submit = dev_io_submit,
};

/* Data I/O runs on the worker (copies run on their helper threads: copy.c). */
static void dev_io_submit(struct ufs_req *req)
{
	ufs_io_run_sync(req);
}

int ufs_dev_clone(int fuse_fd)
{
	uint32_t master = fuse_fd;
	int fd;

	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd >= 0 && !ioctl(fd, FUSE_DEV_IOC_CLONE, &master))
		return fd;
	if (fd >= 0)
		close(fd);
	/*
	 * An unprivileged daemon may not be able to open /dev/fuse itself
	 * (fusermount3 handed it the descriptor).  Reading one file from
	 * several threads works too, it just shares one queue.
	 */
	ufs_log_once(UFS_LOG_DEBUG, "FUSE_DEV_IOC_CLONE unavailable (%m): workers share one descriptor");
	fd = fcntl(fuse_fd, F_DUPFD_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

static void slot_free(struct dev_slot *slot)
{
	free(slot->in);
	free(slot->out);
	free(slot);
}

static struct dev_slot *slot_alloc(struct dev_worker *dw)
{
	const struct ufs_conn *conn = &dw->w->daemon->conn;
	struct dev_slot *slot = calloc(1, sizeof(*slot));

	if (!slot)
		return NULL;
	slot->dw = dw;
	/*
	 * The kernel refuses reads smaller than a request: max_write of data,
	 * or an extended attribute, plus the headers (E2BIG for a SETXATTR).
	 */
	slot->in_size = conn->max_write > UFS_XATTR_PAYLOAD_MAX ? conn->max_write :
			UFS_XATTR_PAYLOAD_MAX;
	/* aligned_alloc() wants a multiple of the alignment. */
	slot->in_size = (slot->in_size + PAGE - 1) / PAGE * PAGE + PAGE;
	slot->out_size = (size_t)conn->max_pages * PAGE;
	if (slot->out_size < REPLY_MIN)
		slot->out_size = REPLY_MIN;
	slot->in = aligned_alloc(PAGE, slot->in_size + PAGE);
	slot->out = aligned_alloc(PAGE, slot->out_size);
	if (!slot->in || !slot->out) {
		slot_free(slot);
		return NULL;
	}
	return slot;
}

static struct dev_slot *slot_get(struct dev_worker *dw)
{
	struct dev_slot *slot;

	pthread_mutex_lock(&dw->lock);
	slot = dw->free;
	if (slot)
		dw->free = slot->next_free;
	pthread_mutex_unlock(&dw->lock);
	if (slot)
		return slot;
	slot = slot_alloc(dw);
	if (slot) {
		pthread_mutex_lock(&dw->lock);
		dw->nslots++;
		pthread_mutex_unlock(&dw->lock);
	}
	return slot;
}

static void slot_put(struct dev_slot *slot)
{
	struct dev_worker *dw = slot->dw;

	pthread_mutex_lock(&dw->lock);
	slot->next_free = dw->free;
	dw->free = slot;
	pthread_mutex_unlock(&dw->lock);
}

int ufs_dev_write_reply(int fd, uint64_t unique, int error, const void *payload, size_t len)
{
	struct fuse_out_header out = {
		.len = sizeof(out) + len,
		.error = error,
		.unique = unique,
	};
	struct iovec iov[2] = {
		{ .iov_base = &out, .iov_len = sizeof(out) },
		{ .iov_base = (void *)payload, .iov_len = len },
	};

	if (writev(fd, iov, len ? 2 : 1) < 0)
		return -errno;
	return 0;
}

static void dev_reply(struct ufs_req *req, int error, size_t len)
{
	struct dev_slot *slot = (struct dev_slot *)((char *)req - offsetof(struct dev_slot, req));
	int ret;

	ufs_req_replied(req);
	if (!req->noreply) {
		ret = ufs_dev_write_reply(slot->dw->fd, req->in->unique, error, req->out, len);
		/*
		 * ENOENT: the request was interrupted and already answered, or
		 * aborted; ENODEV: the connection is gone.  Neither is ours to fix.
		 */
		if (ret && ret != -ENOENT && ret != -ENODEV)
			ufs_log_once(UFS_LOG_ERR, "writing a %s reply failed: %s",
				     ufs_opcode_name(req->in->opcode), strerror(-ret));
	}
	slot_put(slot);
}

/* A request too short to carry a header cannot be answered; one with a bad length can. */
static bool dev_request_valid(struct dev_worker *dw, const struct fuse_in_header *in, ssize_t n)
{
	if ((size_t)n < sizeof(*in)) {
		ufs_log_once(UFS_LOG_ERR, "short read of %zd bytes from /dev/fuse", n);
		return false;
	}
	if (in->len != (size_t)n) {
		ufs_log_once(UFS_LOG_WARN, "request length %u does not match the %zd bytes read",
			     in->len, n);
		ufs_stat_add(&dw->w->stats.bad_requests, 1);
		ufs_dev_write_reply(dw->fd, in->unique, -EIO, NULL, 0);
		return false;
	}
	return true;
}

static void dev_serve(struct dev_worker *dw, struct dev_slot *slot, ssize_t n)
{
	const struct fuse_in_header *in = (const void *)(slot->in + WRITE_DATA_SKEW);
	struct ufs_msg msg;

	if (!dev_request_valid(dw, in, n)) {
		slot_put(slot);
		return;
	}
	msg = (struct ufs_msg){
		.in = in,
		.op = (const uint8_t *)(in + 1),
		.op_len = n - sizeof(*in),
	};
	slot->req.xops = &dev_ops;
	slot->req.worker = dw->w;
	slot->req.out = slot->out;
	slot->req.out_cap = slot->out_size;
	slot->req.direct_io_aligned = true;
	slot->req.replay = in->unique & FUSE_UNIQUE_RESEND;
	if (slot->req.replay)
		ufs_stat_add(&dw->w->stats.requests_replayed, 1);
	ufs_stat_add(&dw->w->stats.requests_dev, 1);
	if (in->opcode == FUSE_READ)
		ufs_stat_add(&dw->w->stats.copied_reads, 1);
	else if (in->opcode == FUSE_WRITE)
		ufs_stat_add(&dw->w->stats.copied_writes, 1);
	ufs_dispatch(&dw->w->daemon->fs, &slot->req, &msg);
}

/* The node id of a RELEASE just read into slot, or 0 (worker.h: ufs_worker_serving). */
static uint64_t released_node(const struct dev_slot *slot, ssize_t n)
{
	const struct fuse_in_header *in = (const void *)(slot->in + WRITE_DATA_SKEW);

	return n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_RELEASE ? in->nodeid : 0;
}

static void *dev_worker_main(void *arg)
{
	struct ufs_worker *w = arg;
	struct dev_worker *dw = w->xpriv;
	int err = 0;

	ufs_worker_thread_setup(w, "dev");
	for (;;) {
		struct dev_slot *slot;
		ssize_t n;

		/* Holding no request: an UNLINK need not wait for it (worker.h). */
		ufs_worker_waiting(w);
		/* A take-over waits here, between requests; the successor reads on. */
		if (ufs_worker_pausing(w->daemon) && ufs_worker_pause_point(w)) {
			ufs_worker_left(w);
			return NULL;
		}
		slot = slot_get(dw);
		if (!slot) {
			ufs_err("worker %u: out of memory for a request buffer", w->id);
			err = ENOMEM;
			break;
		}
		n = read(dw->fd, slot->in + WRITE_DATA_SKEW, slot->in_size);
		ufs_worker_serving(w, released_node(slot, n));
		if (n < 0) {
			err = errno;
			slot_put(slot);
			if (err == EINTR && __atomic_load_n(&w->daemon->stopping, __ATOMIC_ACQUIRE)) {
				err = ENODEV;	/* told to stop: as good as unmounted */
				break;
			}
			/* EINTR: a signal; ENOENT: the request was interrupted before we read it. */
			if (err == EINTR || err == ENOENT || err == EAGAIN)
				continue;
			break;
		}
		dev_serve(dw, slot, n);
	}
	ufs_worker_left(w);
	/* ENODEV is the kernel's way of saying the file system was unmounted. */
	if (err != ENODEV)
		ufs_err("worker %u: reading /dev/fuse failed: %s", w->id, strerror(err));
	ufs_daemon_worker_exited(w->daemon, err == ENODEV ? 0 : -err);
	return NULL;
}

int ufs_dev_worker_start(struct ufs_worker *w, int fd)
{
	struct dev_worker *dw = calloc(1, sizeof(*dw));
	int ret;

	if (!dw) {
		close(fd);
		return -ENOMEM;
	}
	dw->w = w;
	dw->fd = fd;
	pthread_mutex_init(&dw->lock, NULL);
	w->xpriv = dw;
	ret = -pthread_create(&w->thread, NULL, dev_worker_main, w);
	if (ret) {
		close(fd);
		pthread_mutex_destroy(&dw->lock);
		free(dw);
		w->xpriv = NULL;
		return ret;
	}
	w->started = true;
	return 0;
}

int ufs_dev_worker_fd(const struct ufs_worker *w)
{
	const struct dev_worker *dw = w->xpriv;

	return w->started && dw ? dw->fd : -1;
}

void ufs_dev_worker_join(struct ufs_worker *w)
{
	struct dev_worker *dw = w->xpriv;
	struct dev_slot *slot;

	if (!w->started)
		return;
	pthread_join(w->thread, NULL);
	w->started = false;
	while ((slot = dw->free)) {
		dw->free = slot->next_free;
		slot_free(slot);
	}
	close(dw->fd);
	pthread_mutex_destroy(&dw->lock);
	free(dw);
	w->xpriv = NULL;
}

ssize_t ufs_dev_read_init(int fd, void *buf, size_t size)
{
	ssize_t n;

	do {
		n = read(fd, buf, size);
	} while (n < 0 && (errno == EINTR || errno == ENOENT || errno == EAGAIN));
	return n < 0 ? -errno : n;
}
