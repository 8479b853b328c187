// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * copy_file_range off the worker: the helper thread, chunking, cancellation
 * and the self-test of the ring opcode.  The ring submission itself is in
 * uring.c, next to the other ring operations.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuse_abi.h"
#include "interrupt.h"
#include "io_copy.h"
#include "log.h"
#include "worker.h"

struct ufs_copy_job {
	struct ufs_copy_job *next;		/* the registry; protected by copies_lock */
	struct ufs_copy_job *queue_next;	/* the helper's queue; protected by copier->lock */
	struct ufs_req *req;
	uint64_t unique;
	_Atomic bool cancel;
	bool queued;				/* in a helper's queue; protected by copier->lock */
	struct ufs_copier *copier;		/* thread mode */
	void (*cancel_fn)(struct ufs_req *req);	/* ring mode */
};

/* A worker's helper thread and its queue of copies. */
struct ufs_copier {
	struct ufs_worker *w;			/* back pointer */
	pthread_t thread;
	pthread_mutex_t lock;			/* protects everything below */
	pthread_cond_t cond;
	struct ufs_copy_job *head, *tail;
	struct ufs_copy_job *current;		/* running now */
	bool stop;
};

static pthread_mutex_t copies_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ufs_copy_job *copies;
static int copies_active;

enum ufs_cfr_mode ufs_copy_mode_resolve(enum ufs_cfr_mode configured, bool ring_ok)
{
	if (configured == UFS_CFR_AUTO)
		return ring_ok ? UFS_CFR_RING : UFS_CFR_THREAD;
	return configured;
}

size_t ufs_copy_next_len(const struct ufs_io *io)
{
	size_t left = io->len - io->done_bytes;

	return left < UFS_COPY_CHUNK ? left : UFS_COPY_CHUNK;
}

/* ---- the registry INTERRUPT looks in ---- */

void ufs_copy_track(struct ufs_req *req, void (*cancel)(struct ufs_req *req))
{
	struct ufs_copy_job *job = req->copy;

	job->req = req;
	job->unique = req->in->unique;
	job->cancel_fn = cancel;
	pthread_mutex_lock(&copies_lock);
	job->next = copies;
	copies = job;
	/*
	 * Interrupted on its way here: it copies nothing and ends with EINTR.
	 * Claimed once INTERRUPT can find it (see ufs_op_interrupt).
	 */
	job->cancel = ufs_interrupt_claim(job->unique);
	pthread_mutex_unlock(&copies_lock);
	__atomic_fetch_add(&copies_active, 1, __ATOMIC_RELAXED);
}

bool ufs_copy_untrack(struct ufs_req *req)
{
	struct ufs_copy_job *job = req->copy, **pp;
	bool cancelled;

	pthread_mutex_lock(&copies_lock);
	for (pp = &copies; *pp; pp = &(*pp)->next) {
		if (*pp == job) {
			*pp = job->next;
			break;
		}
	}
	pthread_mutex_unlock(&copies_lock);
	cancelled = job->cancel;
	req->copy = NULL;
	free(job);
	return cancelled;
}

bool ufs_copy_cancelled(struct ufs_req *req)
{
	return req->copy && req->copy->cancel;
}

void ufs_copy_finish(struct ufs_req *req, ssize_t res)
{
	struct ufs_stats *st = req->worker ? &req->worker->stats : NULL;
	bool cancelled = ufs_copy_untrack(req);

	if (cancelled && res <= 0)
		res = -EINTR;
	if (st) {
		if (cancelled)
			ufs_stat_add(&st->cfr_cancelled, 1);
		if (res > 0)
			ufs_stat_add(&st->cfr_bytes, res);
	}
	req->io.done(req, res);
	/* Only now: until the reply is out, shutdown must not free the transport. */
	__atomic_fetch_sub(&copies_active, 1, __ATOMIC_RELEASE);
}

/* Remove job from its helper's queue if it has not started.  Returns true if it was queued. */
static bool copier_dequeue(struct ufs_copier *c, struct ufs_copy_job *job)
{
	struct ufs_copy_job **pp;
	bool found = false;

	pthread_mutex_lock(&c->lock);
	if (job->queued) {
		for (pp = &c->head; *pp; pp = &(*pp)->queue_next) {
			if (*pp == job) {
				*pp = job->queue_next;
				break;
			}
		}
		c->tail = NULL;
		for (struct ufs_copy_job *j = c->head; j; j = j->queue_next)
			c->tail = j;
		job->queued = false;
		found = true;
	} else if (c->current == job) {
		/* Break a long copy_file_range(2) out of the kernel. */
		pthread_kill(c->thread, UFS_WORKER_WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&c->lock);
	return found;
}

bool ufs_copy_interrupt(uint64_t unique)
{
	struct ufs_copy_job *job;
	struct ufs_req *req = NULL;
	void (*cancel_fn)(struct ufs_req *) = NULL;
	bool dequeued = false;

	pthread_mutex_lock(&copies_lock);
	for (job = copies; job && job->unique != unique; job = job->next)
		;
	if (job) {
		job->cancel = true;
		if (job->copier)
			dequeued = copier_dequeue(job->copier, job);
		else
			cancel_fn = job->cancel_fn;
		req = job->req;
		/* The ring cancels under the lock: the request cannot finish meanwhile. */
		if (cancel_fn)
			cancel_fn(req);
	}
	pthread_mutex_unlock(&copies_lock);
	if (dequeued)
		ufs_copy_finish(req, -EINTR);
	return job != NULL;
}

/* ---- running a copy with system calls ---- */

/* Chunk by chunk until done, EOF, an error or a cancel. */
static ssize_t copy_run(struct ufs_req *req)
{
	struct ufs_io *io = &req->io;

	io->done_bytes = 0;
	while (io->done_bytes < io->len && !ufs_copy_cancelled(req)) {
		loff_t in = io->off_in + io->done_bytes, out = io->off + io->done_bytes;
		ssize_t n = copy_file_range(io->fd_in, &in, io->fd, &out, ufs_copy_next_len(io),
					    io->mode);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io->done_bytes ? (ssize_t)io->done_bytes : -errno;
		}
		if (!n)
			break;
		io->done_bytes += n;
	}
	return io->done_bytes;
}

static void *copier_main(void *arg)
{
	struct ufs_copier *c = arg;
	char name[16];

	snprintf(name, sizeof(name), "uringfs-copy%u", c->w->id);
	pthread_setname_np(pthread_self(), name);
	ufs_helper_thread_setup(c->w->daemon);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct ufs_copy_job *job;
		ssize_t res;

		while (!c->head && !c->stop)
			pthread_cond_wait(&c->cond, &c->lock);
		if (!c->head)
			break;
		job = c->head;
		c->head = job->queue_next;
		if (!c->head)
			c->tail = NULL;
		job->queued = false;
		c->current = job;
		pthread_mutex_unlock(&c->lock);

		res = copy_run(job->req);

		pthread_mutex_lock(&c->lock);
		c->current = NULL;
		pthread_mutex_unlock(&c->lock);
		ufs_copy_finish(job->req, res);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static struct ufs_copier *copier_get(struct ufs_worker *w)
{
	struct ufs_copier *c = w->copier;

	if (c)
		return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->w = w;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, copier_main, c)) {
		pthread_cond_destroy(&c->cond);
		pthread_mutex_destroy(&c->lock);
		free(c);
		return NULL;
	}
	w->copier = c;
	return c;
}

void ufs_copier_stop(struct ufs_worker *w)
{
	struct ufs_copier *c = w->copier;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
	w->copier = NULL;
}

static struct ufs_copy_job *job_alloc(struct ufs_req *req)
{
	req->copy = calloc(1, sizeof(*req->copy));
	return req->copy;
}

int ufs_copy_track_ring(struct ufs_req *req, void (*cancel)(struct ufs_req *req))
{
	if (!job_alloc(req))
		return -ENOMEM;
	ufs_stat_add(&req->worker->stats.cfr_ring, 1);
	ufs_copy_track(req, cancel);
	return 0;
}

void ufs_copy_submit(struct ufs_req *req, enum ufs_cfr_mode mode)
{
	struct ufs_stats *st = &req->worker->stats;
	struct ufs_copier *c = NULL;

	if (!job_alloc(req)) {
		req->io.done(req, -ENOMEM);
		return;
	}
	if (mode == UFS_CFR_THREAD)
		c = copier_get(req->worker);
	if (!c) {
		/* sync by choice, or no helper thread could start */
		ufs_stat_add(&st->cfr_sync, 1);
		ufs_copy_track(req, NULL);
		ufs_copy_finish(req, copy_run(req));
		return;
	}
	ufs_stat_add(&st->cfr_thread, 1);
	req->copy->copier = c;
	ufs_copy_track(req, NULL);
	pthread_mutex_lock(&c->lock);
	req->copy->queued = true;
	if (c->tail)
		c->tail->queue_next = req->copy;
	else
		c->head = req->copy;
	c->tail = req->copy;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void ufs_copy_interrupt_all(void)
{
	uint64_t uniques[64];
	size_t n = 0;
	struct ufs_copy_job *job;

	do {
		n = 0;
		pthread_mutex_lock(&copies_lock);
		for (job = copies; job && n < 64; job = job->next) {
			if (!job->cancel)
				uniques[n++] = job->unique;
		}
		pthread_mutex_unlock(&copies_lock);
		for (size_t i = 0; i < n; i++)
			ufs_copy_interrupt(uniques[i]);
	} while (n == 64);
}

void ufs_copy_wait_idle(void)
{
	while (__atomic_load_n(&copies_active, __ATOMIC_ACQUIRE)) {
		ufs_copy_interrupt_all();
		usleep(1000);
	}
}

/* ---- the ring opcode's self-test ---- */

static int memfd_with(const char *name, const char *text)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (text && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/*
 * An opcode number alone is never trusted: a kernel could use 65 for
 * something else.  Copy 10 bytes from offset 3 of one memory file to
 * offset 2 of another and check the bytes and the count.
 */
static int selftest_copy(struct io_uring *ring, int src, int dst)
{
	static const char want[] = "\0\0" "uringfs-cf";
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	char got[sizeof(want) - 1];
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UFS_IORING_OP_COPY_FILE_RANGE;
	sqe->fd = dst;
	sqe->off = 2;
	sqe->splice_fd_in = src;
	sqe->splice_off_in = 3;
	sqe->len = 10;
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (ret != 10)
		return ret < 0 ? ret : -EPROTO;
	if (pread(dst, got, sizeof(got), 0) != (ssize_t)sizeof(got) ||
	    memcmp(got, want, sizeof(got)))
		return -EPROTO;
	return 0;
}

int ufs_copy_ring_selftest(const char **why)
{
	struct io_uring_probe *probe;
	struct io_uring ring;
	int src = -1, dst = -1, ret;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		*why = "cannot create a ring";
		return ret;
	}
	probe = io_uring_get_probe_ring(&ring);
	if (!probe || probe->last_op < UFS_IORING_OP_COPY_FILE_RANGE ||
	    !(probe->ops[UFS_IORING_OP_COPY_FILE_RANGE].flags & IO_URING_OP_SUPPORTED)) {
		*why = "kernel has no IORING_OP_COPY_FILE_RANGE";
		ret = -EOPNOTSUPP;
		goto out;
	}
	src = memfd_with("uringfs-cfr-src", "...uringfs-cfr-selftest");
	dst = memfd_with("uringfs-cfr-dst", NULL);
	if (src < 0 || dst < 0) {
		*why = "cannot create memory files";
		ret = src < 0 ? src : dst;
		goto out;
	}
	ret = selftest_copy(&ring, src, dst);
	if (ret)
		*why = "opcode 65 did not copy as copy_file_range(2) would";
out:
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	return ret;
}
