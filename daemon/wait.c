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
 * sleeps is lost, so the main loop sends it again (ufs_wait_kick) until the
 * interrupted wait has ended.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "dispatch.h"
#include "fs.h"
#include "interrupt.h"
#include "io_copy.h"
#include "log.h"
#include "wait.h"
#include "worker.h"

#define WAKE_SIGNAL (SIGRTMIN + 1)

/* A long wait in progress; linked on waits, protected by waits_lock. */
struct ufs_wait {
	struct ufs_wait *next;
	uint64_t unique;
	pthread_t thread;
	struct ufs_req *req;
	const struct ufs_wait_ops *ops;
	void *arg;
	_Atomic bool interrupted;
};

static pthread_mutex_t waits_lock = PTHREAD_MUTEX_INITIALIZER;
static int waits_active;	/* helper threads that have not replied yet */
static bool waits_stopping;	/* the connection ended: no new waits */
static struct ufs_wait *waits;
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

static void wait_unlink(struct ufs_wait *w)
{
	struct ufs_wait **pp;

	pthread_mutex_lock(&waits_lock);
	for (pp = &waits; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&waits_lock);
}

/* The call, again after every wake-up that is not an INTERRUPT. */
static ssize_t wait_run(struct ufs_wait *w)
{
	sigset_t wake;
	ssize_t ret;

	sigemptyset(&wake);
	sigaddset(&wake, WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	for (;;) {
		if (w->interrupted)
			return -EINTR;
		ret = w->ops->run(w->req, w->arg);
		if (ret != -EINTR)
			return ret;
	}
}

static void *wait_thread(void *arg)
{
	struct ufs_wait *w = arg;
	struct ufs_req *req = w->req;
	ssize_t ret;

	ret = wait_run(w);
	wait_unlink(w);
	ret = w->ops->done(req, w->arg, ret);
	free(w);
	ufs_req_done(req, ret);
	__atomic_fetch_sub(&waits_active, 1, __ATOMIC_RELEASE);
	return NULL;
}

int ufs_wait_start(struct ufs_req *req, const struct ufs_wait_ops *ops, void *arg)
{
	struct ufs_wait *w;
	pthread_attr_t attr;
	int ret;

	if (req->xops->hold) {
		ret = req->xops->hold(req);
		if (ret)
			return ret;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	pthread_once(&wake_signal_once, wake_signal_install);
	w->unique = req->in->unique;
	w->req = req;
	w->ops = ops;
	w->arg = arg;

	pthread_mutex_lock(&waits_lock);
	if (waits_stopping) {
		pthread_mutex_unlock(&waits_lock);
		free(w);
		return -EINTR;
	}
	w->next = waits;
	waits = w;
	__atomic_fetch_add(&waits_active, 1, __ATOMIC_RELAXED);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 64 << 10);
	ret = -pthread_create(&w->thread, &attr, wait_thread, w);
	pthread_attr_destroy(&attr);
	/*
	 * Interrupted on its way here: the wait ends at once with EINTR.  Only
	 * now that INTERRUPT can find it (see ufs_op_interrupt for the order).
	 * The thread cannot have ended: it unlinks itself under waits_lock.
	 */
	if (!ret && ufs_interrupt_claim(w->unique)) {
		w->interrupted = true;
		pthread_kill(w->thread, WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&waits_lock);
	if (ret) {
		wait_unlink(w);
		__atomic_fetch_sub(&waits_active, 1, __ATOMIC_RELAXED);
		free(w);
	}
	return ret;
}

bool ufs_wait_interrupt(uint64_t unique)
{
	struct ufs_wait *w;
	bool found = false;

	pthread_mutex_lock(&waits_lock);
	for (w = waits; w; w = w->next) {
		if (w->unique == unique) {
			w->interrupted = true;
			pthread_kill(w->thread, WAKE_SIGNAL);
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&waits_lock);
	return found;
}

int ufs_wait_block_wake_signal(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, WAKE_SIGNAL);
	return pthread_sigmask(SIG_BLOCK, &set, NULL) ? -EINVAL : 0;
}

void ufs_wait_interrupt_all(void)
{
	struct ufs_wait *w;

	pthread_mutex_lock(&waits_lock);
	waits_stopping = true;
	for (w = waits; w; w = w->next) {
		w->interrupted = true;
		pthread_kill(w->thread, WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&waits_lock);
}

bool ufs_wait_kick(void)
{
	struct ufs_wait *w;
	bool pending = false;

	pthread_mutex_lock(&waits_lock);
	for (w = waits; w; w = w->next) {
		if (w->interrupted) {
			pthread_kill(w->thread, WAKE_SIGNAL);
			pending = true;
		}
	}
	pthread_mutex_unlock(&waits_lock);
	return pending;
}

void ufs_wait_idle(void)
{
	while (__atomic_load_n(&waits_active, __ATOMIC_ACQUIRE)) {
		ufs_wait_interrupt_all();
		usleep(1000);
	}
}

ssize_t ufs_op_interrupt(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_interrupt_in *in = req->args.op;

	(void)fs;
	if (req->worker)
		ufs_stat_add(&req->worker->stats.interrupts, 1);
	/*
	 * Lock waits and copies can be abandoned; anything else finishes
	 * quickly and its reply answers the interrupt.  The request may still
	 * be on its way to the wait or copy it becomes (another worker, or the
	 * ring, delivered it): remember the INTERRUPT first and look second,
	 * while a wait or copy shows itself first and claims second.  Any
	 * interleaving then cancels it; looking first could miss a request
	 * that registered and claimed in between.
	 */
	ufs_interrupt_remember(in->unique);
	ufs_debug_pause("interrupt");
	if (ufs_wait_interrupt(in->unique) || ufs_copy_interrupt(in->unique))
		ufs_interrupt_claim(in->unique);	/* found: the record is not needed */
	return 0;
}
