// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Locks: GETLK, SETLK, SETLKW for POSIX record locks and flock().
 *
 * POSIX locks belong to a lock owner (the kernel's lock_owner, one per
 * client process), not to a descriptor.  Each (inode, owner) pair gets an
 * open file description of its own and takes open-file-description locks
 * (F_OFD_*) on it: locks of one owner merge and split as POSIX says, locks
 * of different owners conflict, and processes using the backing directory
 * directly see them too.  FLUSH with the owner drops them, as close(2) does.
 *
 * flock() locks belong to the open file, which is exactly our descriptor
 * for the FUSE open.
 *
 * SETLKW may wait forever, so it waits on a helper thread and the request
 * is completed from there; an INTERRUPT for it wakes the thread with a
 * signal and the caller sees EINTR.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "dispatch.h"
#include "fs.h"
#include "log.h"
#include "interrupt.h"
#include "io_copy.h"
#include "worker.h"

#define OFFSET_MAX_FUSE INT64_MAX

/* One lock owner's open file description on an inode; protected by inode->lock. */
struct ufs_lock_owner {
	struct ufs_lock_owner *next;
	uint64_t owner;
	int fd;
	pid_t pid;			/* the process that last locked through it */
	unsigned int waiters;		/* SETLKWs waiting on fd: it must stay open */
};

/* A SETLKW waiting on its helper thread; protected by waits_lock. */
struct lock_wait {
	struct lock_wait *next;
	uint64_t unique;
	pthread_t thread;
	struct ufs_req *req;
	struct ufs_inode *inode;
	struct ufs_lock_owner *owner;	/* POSIX: its waiters count holds it open */
	int fd;
	bool flock;
	int flock_op;
	struct flock fl;
	_Atomic bool interrupted;
};

static pthread_mutex_t waits_lock = PTHREAD_MUTEX_INITIALIZER;
static int waits_active;	/* helper threads that have not replied yet */
static bool waits_stopping;	/* the connection ended: no new waits */
static struct lock_wait *waits;
static pthread_once_t wake_signal_once = PTHREAD_ONCE_INIT;

#define WAKE_SIGNAL (SIGRTMIN + 1)

/* Only there to make a waiting fcntl()/flock() return EINTR. */
static void wake_handler(int sig)
{
	(void)sig;
}

static void wake_signal_install(void)
{
	struct sigaction sa = { .sa_handler = wake_handler };

	sigemptyset(&sa.sa_mask);
	sigaction(WAKE_SIGNAL, &sa, NULL);	/* no SA_RESTART: fcntl() returns EINTR */
}

/* Called with inode->lock held. */
static struct ufs_lock_owner *owner_find(struct ufs_inode *inode, uint64_t owner)
{
	struct ufs_lock_owner *o;

	for (o = inode->lock_owners; o; o = o->next) {
		if (o->owner == owner)
			return o;
	}
	return NULL;
}

/* Called with inode->lock held. */
static int owner_get(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t owner, int accmode,
		     struct ufs_lock_owner **out)
{
	struct ufs_lock_owner *o = owner_find(inode, owner);
	int fd;

	if (o) {
		*out = o;
		return 0;
	}
	/* Read and write locks both need the description open for both. */
	fd = ufs_reopen(fs, inode, O_RDWR);
	if (fd < 0)
		fd = ufs_reopen(fs, inode, accmode);
	if (fd < 0)
		return fd;
	o = calloc(1, sizeof(*o));
	if (!o) {
		close(fd);
		return -ENOMEM;
	}
	o->owner = owner;
	o->fd = fd;
	o->next = inode->lock_owners;
	inode->lock_owners = o;
	*out = o;
	return 0;
}

/*
 * close(2) of any descriptor drops every POSIX lock its owner holds on the
 * inode (FLUSH says so).  Closing the owner's description does that in one
 * call, but a SETLKW of the same owner (another thread of the process) may
 * be waiting on it: Linux lets that wait go on, and a lock granted then is
 * held.  Granted on a closed description, it would vanish at once, so then
 * the locks are unlocked instead and the description stays.
 */
void ufs_lock_release_owner(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t owner)
{
	struct flock all = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	struct ufs_lock_owner **pp, *o = NULL;

	(void)fs;
	pthread_mutex_lock(&inode->lock);
	for (pp = &inode->lock_owners; *pp; pp = &(*pp)->next) {
		if ((*pp)->owner == owner) {
			o = *pp;
			if (o->waiters) {
				fcntl(o->fd, F_OFD_SETLK, &all);
				o = NULL;
			} else {
				*pp = o->next;
			}
			break;
		}
	}
	pthread_mutex_unlock(&inode->lock);
	if (o) {
		close(o->fd);	/* drops every lock of the owner */
		free(o);
	}
}

void ufs_lock_release_all(struct ufs_inode *inode)
{
	struct ufs_lock_owner *o = inode->lock_owners;

	while (o) {
		struct ufs_lock_owner *next = o->next;

		close(o->fd);
		free(o);
		o = next;
	}
	inode->lock_owners = NULL;
}

static void to_flock(const struct fuse_file_lock *lk, struct flock *fl)
{
	memset(fl, 0, sizeof(*fl));
	fl->l_type = lk->type;
	fl->l_whence = SEEK_SET;
	fl->l_start = lk->start;
	fl->l_len = lk->end == (uint64_t)OFFSET_MAX_FUSE ? 0 : lk->end - lk->start + 1;
}

static void from_flock(const struct flock *fl, struct fuse_file_lock *lk, pid_t pid)
{
	lk->type = fl->l_type;
	lk->start = fl->l_start;
	lk->end = fl->l_len ? (uint64_t)(fl->l_start + fl->l_len - 1) : (uint64_t)OFFSET_MAX_FUSE;
	lk->pid = pid;
}

static int lock_range_check(const struct fuse_file_lock *lk)
{
	if (lk->start > (uint64_t)OFFSET_MAX_FUSE || lk->end > (uint64_t)OFFSET_MAX_FUSE ||
	    lk->end < lk->start)
		return -EINVAL;
	if (lk->type != F_RDLCK && lk->type != F_WRLCK && lk->type != F_UNLCK)
		return -EINVAL;
	return 0;
}

/* Some other owner on this inode, for the pid a conflicting lock is reported with. */
static pid_t conflict_pid(struct ufs_inode *inode, uint64_t owner)
{
	struct ufs_lock_owner *o;

	for (o = inode->lock_owners; o; o = o->next) {
		if (o->owner != owner && o->pid)
			return o->pid;
	}
	return 0;
}

ssize_t ufs_op_getlk(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_lk_in *in = req->args.op;
	struct fuse_lk_out *out = req->out;
	struct ufs_file *file = ufs_file_lookup(fs, in->fh);
	struct ufs_inode *inode = req->inode;
	struct ufs_lock_owner *o;
	struct flock fl;
	int ret;

	if (!file || file->fd < 0)
		return -EBADF;
	ret = lock_range_check(&in->lk);
	if (ret)
		return ret;
	to_flock(&in->lk, &fl);
	pthread_mutex_lock(&inode->lock);
	ret = owner_get(fs, inode, in->owner, file->flags & O_ACCMODE, &o);
	if (!ret)
		ret = fcntl(o->fd, F_OFD_GETLK, &fl) ? -errno : 0;
	memset(out, 0, sizeof(*out));
	if (!ret)
		from_flock(&fl, &out->lk, fl.l_type == F_UNLCK ? 0 : conflict_pid(inode, in->owner));
	pthread_mutex_unlock(&inode->lock);
	return ret ? ret : (ssize_t)sizeof(*out);
}

static int flock_op(const struct fuse_lk_in *in, bool wait)
{
	int op;

	switch (in->lk.type) {
	case F_RDLCK:
		op = LOCK_SH;
		break;
	case F_WRLCK:
		op = LOCK_EX;
		break;
	case F_UNLCK:
		return LOCK_UN;
	default:
		return -EINVAL;
	}
	return wait ? op : op | LOCK_NB;
}

/*
 * Take or drop a lock without waiting.  Returns 0, -EAGAIN on conflict, or an
 * error.  With waiter, a POSIX conflict also returns the owner with a waiter
 * counted, so that its description stays open for the wait (the caller
 * ends it with wait_end()).
 */
static int lock_try(struct ufs_fs *fs, struct ufs_req *req, const struct fuse_lk_in *in,
		    struct ufs_file *file, int *wait_fd, struct flock *fl,
		    struct ufs_lock_owner **waiter)
{
	struct ufs_inode *inode = req->inode;
	struct ufs_lock_owner *o;
	int ret;

	if (in->lk_flags & FUSE_LK_FLOCK) {
		int op = flock_op(in, false);

		if (op < 0)
			return op;
		*wait_fd = file->fd;
		ret = flock(file->fd, op) ? -errno : 0;
		return ret == -EWOULDBLOCK ? -EAGAIN : ret;
	}
	ret = lock_range_check(&in->lk);
	if (ret)
		return ret;
	to_flock(&in->lk, fl);
	pthread_mutex_lock(&inode->lock);
	ret = owner_get(fs, inode, in->owner, file->flags & O_ACCMODE, &o);
	if (!ret) {
		*wait_fd = o->fd;
		ret = fcntl(o->fd, F_OFD_SETLK, fl) ? -errno : 0;
		if (!ret && in->lk.type != F_UNLCK)
			o->pid = in->lk.pid;
		if (ret == -EACCES)
			ret = -EAGAIN;
		if (ret == -EAGAIN && waiter) {
			o->waiters++;
			*waiter = o;
		}
	}
	pthread_mutex_unlock(&inode->lock);
	return ret;
}

/* A wait on an owner's description is over. */
static void wait_end(struct ufs_inode *inode, struct ufs_lock_owner *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&inode->lock);
	o->waiters--;
	pthread_mutex_unlock(&inode->lock);
}

ssize_t ufs_op_setlk(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_lk_in *in = req->args.op;
	struct ufs_file *file = ufs_file_lookup(fs, in->fh);
	struct flock fl;
	int fd;

	if (!file || file->fd < 0)
		return -EBADF;
	return lock_try(fs, req, in, file, &fd, &fl, NULL);
}

static void wait_unlink(struct lock_wait *w)
{
	struct lock_wait **pp;

	pthread_mutex_lock(&waits_lock);
	for (pp = &waits; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	pthread_mutex_unlock(&waits_lock);
}

/*
 * Wait for the lock; returns 0, -EINTR or an error.  WAKE_SIGNAL interrupts
 * the wait.  One sent just before fcntl() sleeps is lost, so the main loop
 * sends it again (ufs_lock_kick) until an interrupted wait has ended.
 */
static int wait_blocking(struct lock_wait *w)
{
	sigset_t wake;
	int ret;

	sigemptyset(&wake);
	sigaddset(&wake, WAKE_SIGNAL);
	pthread_sigmask(SIG_UNBLOCK, &wake, NULL);
	for (;;) {
		if (w->interrupted)
			return -EINTR;
		if (w->flock)
			ret = flock(w->fd, w->flock_op) ? -errno : 0;
		else
			ret = fcntl(w->fd, F_OFD_SETLKW, &w->fl) ? -errno : 0;
		if (ret != -EINTR)
			return ret;
	}
}

static void *wait_thread(void *arg)
{
	struct lock_wait *w = arg;
	struct ufs_req *req = w->req;
	int ret;

	ret = wait_blocking(w);
	wait_unlink(w);
	if (w->owner) {
		pthread_mutex_lock(&w->inode->lock);
		if (!ret)
			w->owner->pid = ((const struct fuse_lk_in *)req->args.op)->lk.pid;
		w->owner->waiters--;
		pthread_mutex_unlock(&w->inode->lock);
	}
	free(w);
	ufs_req_done(req, ret);
	__atomic_fetch_sub(&waits_active, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int wait_start(struct ufs_req *req, const struct fuse_lk_in *in, int fd,
		      const struct flock *fl, struct ufs_lock_owner *owner)
{
	struct lock_wait *w = calloc(1, sizeof(*w));
	pthread_attr_t attr;
	int ret;

	if (!w)
		return -ENOMEM;
	w->owner = owner;
	pthread_once(&wake_signal_once, wake_signal_install);
	w->unique = req->in->unique;
	w->req = req;
	w->inode = req->inode;
	w->fd = fd;
	w->flock = in->lk_flags & FUSE_LK_FLOCK;
	w->flock_op = flock_op(in, true);
	if (fl)
		w->fl = *fl;

	pthread_mutex_lock(&waits_lock);
	if (waits_stopping) {
		pthread_mutex_unlock(&waits_lock);
		free(w);
		return -EINTR;	/* the caller ends the owner's wait */
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

ssize_t ufs_op_setlkw(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_lk_in *in = req->args.op;
	struct ufs_file *file = ufs_file_lookup(fs, in->fh);
	struct ufs_lock_owner *owner = NULL;
	struct flock fl;
	int fd = -1, ret;

	if (!file || file->fd < 0)
		return -EBADF;
	/* Most waits are not waits at all: try first, on the worker. */
	ret = lock_try(fs, req, in, file, &fd, &fl, &owner);
	if (ret != -EAGAIN)
		return ret;
	ufs_debug_pause("setlkw");
	ret = req->xops->hold ? req->xops->hold(req) : 0;
	if (!ret)
		ret = wait_start(req, in, fd, (in->lk_flags & FUSE_LK_FLOCK) ? NULL : &fl, owner);
	if (ret) {
		wait_end(req->inode, owner);
		return ret;
	}
	return -UFS_EQUEUED;
}

/* INTERRUPT: wake a SETLKW waiting for the named request, if there is one. */
bool ufs_lock_interrupt(uint64_t unique)
{
	struct lock_wait *w;
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

int ufs_lock_block_wake_signal(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, WAKE_SIGNAL);
	return pthread_sigmask(SIG_BLOCK, &set, NULL) ? -EINVAL : 0;
}

/*
 * The connection ended: wake every lock wait (each replies EINTR) and make
 * later ones fail at once, so no helper thread waits on a dead mount.
 */
void ufs_lock_interrupt_all(void)
{
	struct lock_wait *w;

	pthread_mutex_lock(&waits_lock);
	waits_stopping = true;
	for (w = waits; w; w = w->next) {
		w->interrupted = true;
		pthread_kill(w->thread, WAKE_SIGNAL);
	}
	pthread_mutex_unlock(&waits_lock);
}

/* Interrupted waits still waiting: the signal may have come too early.  Send it again. */
bool ufs_lock_kick(void)
{
	struct lock_wait *w;
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

/* Wait until every lock-wait thread has replied, so none outlives its transport. */
void ufs_lock_wait_idle(void)
{
	while (__atomic_load_n(&waits_active, __ATOMIC_ACQUIRE)) {
		ufs_lock_interrupt_all();
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
	if (ufs_lock_interrupt(in->unique) || ufs_copy_interrupt(in->unique))
		ufs_interrupt_claim(in->unique);	/* found: the record is not needed */
	return 0;
}
