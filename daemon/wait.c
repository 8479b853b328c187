// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Long waits: a request whose system call may block for as long as another
 * process decides (a SETLKW on a held lock, an open that must wait for a
 * lease to be broken) runs that call on a helper thread of its own, so the
 * worker goes on serving, and replies from there.
 *
 * An INTERRUPT for the request, or the end of the connection, wakes the
 * call with WAKE_SIGNAL (installed without SA_RESTART, so the call returns
 * EINTR) and the caller sees EINTR.  A signal sent just before the call
 * sleeps would be lost, so the call is woken every WAIT_TICK_MS anyway, by
 * a timer of its own thread, and looks again.  The ticks also catch what
 * the kernel may never say:
 *  - an INTERRUPT: over io_uring the kernel does not send one for a caller
 *    signalled while its request waited for a ring entry (fs/fuse/
 *    dev_uring.c: fuse_uring_prepare_send sets FR_SENT without checking
 *    FR_INTERRUPTED, unlike fuse_dev_do_read), and that caller then waits
 *    in D state, even for SIGKILL.  A signal pending for the caller at two
 *    looks in a row ends the wait as an INTERRUPT would;
 *  - the request timeout: a wait must end before the kernel aborts the
 *    whole mount for it, so with request_timeout it gives up with the
 *    operation's timeout error WAIT_TIMEOUT_MARGIN_S before.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "caller.h"
#include "fs.h"
#include "inflight.h"
#include "interrupt.h"
#include "log.h"
#include "init_negotiate.h"
#include "wait.h"
#include "worker.h"

/* glibc before 2.35 has the field but not its name (sigevent(7)). */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define WAKE_SIGNAL (SIGRTMIN + 1)
#define WAIT_TICK_MS 50
#define WAIT_SIGNAL_LOOK_TICKS 4	/* the caller's pending signals, every 200 ms */
#define WAIT_TIMEOUT_MARGIN_S 5

/* A long wait in progress. */
struct ufs_wait {
	struct ufs_wait *next;		/* on waits->list; protected by waits->lock */
	struct ufs_waits *waits;
	uint64_t unique;
	pthread_t thread;
	struct ufs_req *req;
	const struct ufs_wait_ops *ops;
	void *arg;
	_Atomic bool interrupted;
};

/* A signal's disposition is the process's: installed once, for every daemon. */
static pthread_once_t wake_signal_once = PTHREAD_ONCE_INIT;

/* Only there to make a waiting call return EINTR. */
static void wake_handler(int sig)
{
	(void)sig;
}

static void wake_signal_install(void)
{
	struct sigaction sa = { .sa_handler = wake_handler };

	sigemptyset(&sa.sa_mask);
	sigaction(WAKE_SIGNAL, &sa, NULL);	/* no SA_RESTART */
}

void ufs_waits_init(struct ufs_waits *ws, struct ufs_interrupts *early)
{
	*ws = (struct ufs_waits){ .early = early };
	pthread_mutex_init(&ws->lock, NULL);
}

void ufs_waits_destroy(struct ufs_waits *ws)
{
	pthread_mutex_destroy(&ws->lock);
}

static void wait_unlink(struct ufs_wait *w)
{
	struct ufs_waits *ws = w->waits;
	struct ufs_wait **pp;

	pthread_mutex_lock(&ws->lock);
	for (pp = &ws->list; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&ws->lock);
}

/* A timer that sends this thread WAKE_SIGNAL every WAIT_TICK_MS. */
static int tick_start(timer_t *timer)
{
	struct sigevent ev = {
		.sigev_notify = SIGEV_THREAD_ID,
		.sigev_signo = WAKE_SIGNAL,
		.sigev_notify_thread_id = gettid(),
	};
	struct itimerspec every = {
		.it_interval = { .tv_nsec = WAIT_TICK_MS * 1000000L },
		.it_value = { .tv_nsec = WAIT_TICK_MS * 1000000L },
	};

	if (timer_create(CLOCK_MONOTONIC, &ev, timer))
		return -errno;
	if (timer_settime(*timer, 0, &every, NULL)) {
		timer_delete(*timer);
		return -errno;
	}
	return 0;
}

/* Seconds a wait may last before the kernel's request timeout: 0 for no limit. */
static unsigned int wait_limit_s(const struct ufs_req *req)
{
	unsigned int t = req->fs->cfg->request_timeout;

	if (!t || !ufs_conn_has(req->fs->conn, FUSE_REQUEST_TIMEOUT))
		return 0;
	return t - WAIT_TIMEOUT_MARGIN_S;	/* at least 10: request_timeout >= 15 */
}

/*
 * The call, again after every wake-up, until it is done, interrupted (by
 * INTERRUPT, or by a signal the kernel did not tell us of) or out of time.
 */
static ssize_t wait_run(struct ufs_wait *w)
{
	unsigned int limit = wait_limit_s(w->req), ticks = 0, signalled = 0;
	struct timespec start, now;
	sigset_t wake;
	timer_t timer;
	ssize_t ret;

	sigemptyset(&wake);
	sigaddset(&wake, WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	clock_gettime(CLOCK_MONOTONIC, &start);
	if (tick_start(&timer)) {
		ufs_log_once(UFS_LOG_ERR, "long wait: no timer (%m): waits end only by INTERRUPT");
		timer = NULL;
	}
	for (;;) {
		if (w->interrupted) {
			ret = -EINTR;
			break;
		}
		ret = w->ops->run(w->req, w->arg);
		if (ret != -EINTR)
			break;
		if (++ticks % WAIT_SIGNAL_LOOK_TICKS == 0) {
			signalled = ufs_caller_signalled(w->req) == 1 ? signalled + 1 : 0;
			if (signalled == 2) {
				ufs_log_once(UFS_LOG_INFO, "a caller waiting in %s has a signal "
					     "pending but no INTERRUPT came: ending its wait",
					     w->ops->name);
				w->interrupted = true;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (limit && now.tv_sec - start.tv_sec >= limit) {
			ufs_log_once(UFS_LOG_WARN, "%s waited %u s, near request_timeout: giving up "
				     "(%s) before the kernel aborts the mount", w->ops->name, limit,
				     strerror(-w->ops->timeout_error));
			ret = w->ops->timeout_error;
			break;
		}
	}
	if (timer)
		timer_delete(timer);
	return ret;
}

static void *wait_thread(void *arg)
{
	struct ufs_wait *w = arg;
	struct ufs_waits *ws = w->waits;
	struct ufs_req *req = w->req;
	ssize_t ret;

	ret = wait_run(w);
	wait_unlink(w);
	ret = w->ops->done(req, w->arg, ret);
	free(w);
	ufs_req_complete(req, ret);
	__atomic_fetch_sub(&ws->active, 1, __ATOMIC_RELEASE);
	return NULL;
}

int ufs_wait_start(struct ufs_waits *ws, struct ufs_req *req, const struct ufs_wait_ops *ops,
		   void *arg)
{
	struct ufs_wait *w;
	pthread_attr_t attr;
	int ret;

	if (req->xops->hold) {
		ret = req->xops->hold(req);
		if (ret)
			return ret;
	}
	/* The in-flight list says what it waits for (a lock: not called slow, slow.c). */
	ufs_inflight_waiting(req, ops->waits_for);
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_once(&wake_signal_once, wake_signal_install);
	w->waits = ws;
	w->unique = req->in->unique;
	w->req = req;
	w->ops = ops;
	w->arg = arg;

	/* Checked where active grows, under the lock: the bound is exact. */
	pthread_mutex_lock(&ws->lock);
	if (ws->stopping ||
	    (ws->max && __atomic_load_n(&ws->active, __ATOMIC_RELAXED) >= ws->max)) {
		ret = ws->stopping ? -EINTR : -ENOLCK;
		pthread_mutex_unlock(&ws->lock);
		free(w);
		if (ret == -ENOLCK)
			ufs_log_once(UFS_LOG_WARN, "%d long waits at once: the next lock wait "
				     "answers ENOLCK (raise queue_depth or workers)", ws->max);
		return ret;
	}
	w->next = ws->list;
	ws->list = w;
	__atomic_fetch_add(&ws->active, 1, __ATOMIC_RELAXED);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	ret = -pthread_create(&w->thread, &attr, wait_thread, w);
	pthread_attr_destroy(&attr);
	/*
	 * Interrupted on its way here: the wait ends at once with EINTR.  Only
	 * now that INTERRUPT can find it (see ufs_op_interrupt for the order).
	 * The thread cannot have ended: it unlinks itself under ws->lock.
	 */
	if (!ret && ufs_interrupt_claim(ws->early, w->unique)) {
		w->interrupted = true;
		pthread_kill(w->thread, WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&ws->lock);
	if (ret) {
		wait_unlink(w);
		__atomic_fetch_sub(&ws->active, 1, __ATOMIC_RELAXED);
		free(w);
	}
	return ret;
}

bool ufs_wait_interrupt(struct ufs_waits *ws, uint64_t unique)
{
	struct ufs_wait *w;
	bool found = false;

	pthread_mutex_lock(&ws->lock);
	for (w = ws->list; w; w = w->next) {
		if (w->unique == unique) {
			w->interrupted = true;
			pthread_kill(w->thread, WAKE_SIGNAL);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&ws->lock);
	return found;
}

int ufs_wait_block_wake_signal(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, WAKE_SIGNAL);
	return pthread_sigmask(SIG_BLOCK, &set, NULL) ? -EINVAL : 0;
}

void ufs_wait_interrupt_all(struct ufs_waits *ws)
{
	struct ufs_wait *w;

	pthread_mutex_lock(&ws->lock);
	ws->stopping = true;
	for (w = ws->list; w; w = w->next) {
		w->interrupted = true;
		pthread_kill(w->thread, WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&ws->lock);
}

void ufs_wait_idle(struct ufs_waits *ws)
{
	while (__atomic_load_n(&ws->active, __ATOMIC_ACQUIRE)) {
		ufs_wait_interrupt_all(ws);
		usleep(1000);
	}
}
