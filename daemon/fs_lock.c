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
 * SETLKW may wait forever, so it waits on a helper thread (wait.c) and the
 * request is completed from there; an INTERRUPT for it ends the wait and
 * the caller sees EINTR.
 *
 * A take-over hands the owners' descriptions to the successor with what
 * they are keyed by (ufs_lock_owners_collect, ufs_lock_owner_restore): the
 * locks are the descriptions', so they stay held.  A SETLKW parked then is
 * the kernel's request, left unanswered by the predecessor (its wait thread
 * goes with the process): the kernel sends it to the successor again, which
 * waits on the same description.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "file_table.h"
#include "fs.h"
#include "fs_lock.h"
#include "fs_shared.h"
#include "inflight_state.h"
#include "lockdep.h"
#include "log.h"
#include "wait.h"
#include "worker.h"

#define OFFSET_MAX_FUSE INT64_MAX

/* One lock owner's open file description on an inode; protected by inode->lock. */
struct ufs_lock_owner {
	struct ufs_lock_owner *next;
	uint64_t owner;
	int fd;
	uint64_t fh;			/* the open it last locked through */
	uid_t uid;			/* charged for fd (budget.h) */
	struct ufs_budget *budget;
	uint64_t *count;		/* fs->lock_owners, counting it */
	pid_t pid;			/* the process that last locked through it */
	unsigned int waiters;		/* SETLKWs waiting on fd: it must stay open */
};

/* A SETLKW's wait, on its own helper thread (wait.c). */
struct lock_wait {
	struct ufs_inode *inode;
	struct ufs_lock_owner *owner;	/* POSIX: its waiters count holds it open */
	int fd;
	bool flock;
	int flock_op;
	struct flock fl;
};

/* Called with inode->lock held. */
static struct ufs_lock_owner *owner_find(struct ufs_inode *inode, uint64_t owner)
{
	UFS_ASSERT_HELD(&inode->lock);
	struct ufs_lock_owner *o;

	for (o = inode->lock_owners; o; o = o->next) {
		if (o->owner == owner)
			return o;
	}
	return NULL;
}

/* Called with inode->lock held. */
static int owner_get(struct ufs_fs *fs, struct ufs_req *req, struct ufs_inode *inode,
		     uint64_t owner, int accmode, struct ufs_lock_owner **out)
{
	UFS_ASSERT_HELD(&inode->lock);
	const struct fuse_lk_in *in = req->args.op;
	struct ufs_lock_owner *o = owner_find(inode, owner);
	uid_t uid = req->caller_uid;
	int fd;

	if (o) {
		o->fh = in->fh;
		*out = o;
		return 0;
	}
	/* The owner's description is the caller's to pay for (budget.h). */
	fd = ufs_budget_charge(&fs->budget, uid, 1);
	if (fd)
		return fd;
	/* Read and write locks both need the description open for both. */
	fd = ufs_reopen(fs, inode, O_RDWR);
	if (fd < 0)
		fd = ufs_reopen(fs, inode, accmode);
	if (fd < 0) {
		ufs_budget_uncharge(&fs->budget, uid, 1);
		return fd;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		close(fd);
		ufs_budget_uncharge(&fs->budget, uid, 1);
		return -ENOMEM;
	}
	o->owner = owner;
	o->fd = fd;
	o->fh = in->fh;
	o->uid = uid;
	o->budget = &fs->budget;
	o->count = &fs->lock_owners;
	__atomic_add_fetch(o->count, 1, __ATOMIC_RELEASE);
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
static void release_matching(struct ufs_inode *inode, bool by_fh, uint64_t key)
{
	struct flock all = { .l_type = F_UNLCK, .l_whence = SEEK_SET };
	struct ufs_lock_owner **pp, *o, *gone = NULL;

	pthread_mutex_lock(&inode->lock);
	for (pp = &inode->lock_owners; (o = *pp);) {
		if ((by_fh ? o->fh : o->owner) != key) {
			pp = &o->next;
		} else if (o->waiters) {
			fcntl(o->fd, F_OFD_SETLK, &all);
			pp = &o->next;
		} else {
			*pp = o->next;
			o->next = gone;
			gone = o;
		}
	}
	pthread_mutex_unlock(&inode->lock);
	while ((o = gone)) {
		gone = o->next;
		close(o->fd);	/* drops every lock of the owner */
		ufs_budget_uncharge(o->budget, o->uid, 1);
		__atomic_sub_fetch(o->count, 1, __ATOMIC_RELEASE);
		free(o);
	}
}

void ufs_lock_release_owner(struct ufs_fs *fs, struct ufs_inode *inode, uint64_t owner)
{
	(void)fs;
	release_matching(inode, false, owner);
}

/*
 * RELEASE of fh: the owners that last locked through it go too.  An OFD
 * lock's owner is its open file, which no FLUSH names (close(2) flushes
 * for the process) and the kernel sends no unlock for (its own lock lists
 * are empty: the server keeps the locks), so without this its locks would
 * outlive the file until the inode is released.  A process's owner that
 * locked through fh holds nothing by now: its close(2) of that descriptor
 * was FLUSHed, and FLUSH drops all its locks; if it locks through another
 * open since, its fh is that one's.
 */
void ufs_lock_release_fh(struct ufs_inode *inode, uint64_t fh)
{
	release_matching(inode, true, fh);
}

void ufs_lock_release_all(struct ufs_inode *inode)
{
	struct ufs_lock_owner *o = inode->lock_owners;

	while (o) {
		struct ufs_lock_owner *next = o->next;

		close(o->fd);
		ufs_budget_uncharge(o->budget, o->uid, 1);
		__atomic_sub_fetch(o->count, 1, __ATOMIC_RELEASE);
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
	struct ufs_file *file = ufs_file_lookup(&fs->files, in->fh);
	struct ufs_inode *inode = req->inode;
	struct ufs_lock_owner *o;
	struct flock fl;
	int ret;

	if (!file || file->inode->control)
		return -EBADF;
	ret = lock_range_check(&in->lk);
	if (ret)
		return ret;
	to_flock(&in->lk, &fl);
	pthread_mutex_lock(&inode->lock);
	ret = owner_get(fs, req, inode, in->owner, file->flags & O_ACCMODE, &o);
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
		/* A flock lives on the open file description: the file keeps one. */
		ret = ufs_file_fd_keep(fs, file);
		if (ret)
			return ret;
		*wait_fd = file->fd;
		ret = flock(file->fd, op) ? -errno : 0;
		return ret == -EWOULDBLOCK ? -EAGAIN : ret;
	}
	ret = lock_range_check(&in->lk);
	if (ret)
		return ret;
	to_flock(&in->lk, fl);
	pthread_mutex_lock(&inode->lock);
	ret = owner_get(fs, req, inode, in->owner, file->flags & O_ACCMODE, &o);
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
	struct ufs_file *file = ufs_file_lookup(&fs->files, in->fh);
	struct flock fl;
	int fd;

	if (!file || file->inode->control)
		return -EBADF;
	return lock_try(fs, req, in, file, &fd, &fl, NULL);
}

static ssize_t lock_wait_run(struct ufs_req *req, void *arg)
{
	struct lock_wait *w = arg;

	(void)req;
	if (w->flock)
		return flock(w->fd, w->flock_op) ? -errno : 0;
	return fcntl(w->fd, F_OFD_SETLKW, &w->fl) ? -errno : 0;
}

static ssize_t lock_wait_done(struct ufs_req *req, void *arg, ssize_t ret)
{
	const struct fuse_lk_in *in = req->args.op;
	struct lock_wait *w = arg;

	if (w->owner) {
		pthread_mutex_lock(&w->inode->lock);
		if (!ret)
			w->owner->pid = in->lk.pid;
		w->owner->waiters--;
		pthread_mutex_unlock(&w->inode->lock);
	}
	free(w);
	return ret;
}

static const struct ufs_wait_ops lock_wait_ops = {
	.name = "a lock wait",
	.run = lock_wait_run,
	.done = lock_wait_done,
	.timeout_error = -EDEADLK,	/* never: locks and request_timeout exclude each other */
	.waits_for = UFS_INFLIGHT_WAIT_LOCK,
};

ssize_t ufs_op_setlkw(struct ufs_fs *fs, struct ufs_req *req)
{
	const struct fuse_lk_in *in = req->args.op;
	struct ufs_file *file = ufs_file_lookup(&fs->files, in->fh);
	struct lock_wait *w;
	int ret;

	if (!file || file->inode->control)
		return -EBADF;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	/* Most waits are not waits at all: try first, on the worker. */
	ret = lock_try(fs, req, in, file, &w->fd, &w->fl, &w->owner);
	if (ret != -EAGAIN) {
		free(w);
		return ret;
	}
	ufs_debug_pause("setlkw");
	w->inode = req->inode;
	w->flock = in->lk_flags & FUSE_LK_FLOCK;
	w->flock_op = flock_op(in, true);
	ret = ufs_wait_start(&fs->waits, req, &lock_wait_ops, w);
	if (ret) {
		wait_end(req->inode, w->owner);
		free(w);
		return ret;
	}
	return -UFS_EQUEUED;
}

/* ---- take-over ---- */

struct owners_collect {
	struct ufs_lock_owner_state *v;
	size_t n, cap;
	int error;
};

/* Called with the store's inode_lock held (ufs_inode_for_each). */
static void owners_of(void *arg, struct ufs_inode *inode)
{
	struct owners_collect *c = arg;
	struct ufs_lock_owner *o;

	pthread_mutex_lock(&inode->lock);
	for (o = inode->lock_owners; o && !c->error; o = o->next) {
		struct ufs_lock_owner_state *s;

		if (c->n == c->cap) {
			size_t cap = c->cap ? 2 * c->cap : 16;

			s = realloc(c->v, cap * sizeof(*s));
			if (!s) {
				c->error = -ENOMEM;
				break;
			}
			c->v = s;
			c->cap = cap;
		}
		s = &c->v[c->n];
		s->fd = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
		if (s->fd < 0) {
			c->error = -errno;
			break;
		}
		s->nodeid = inode->nodeid;
		s->owner = o->owner;
		s->fh = o->fh;
		s->uid = o->uid;
		s->pid = o->pid;
		c->n++;
	}
	pthread_mutex_unlock(&inode->lock);
}

int ufs_lock_owners_collect(struct ufs_fs *fs, struct ufs_lock_owner_state **v, size_t *n)
{
	struct owners_collect c = { 0 };

	if (__atomic_load_n(&fs->lock_owners, __ATOMIC_ACQUIRE))
		ufs_inode_for_each(&fs->inodes, owners_of, &c);
	if (c.error) {
		ufs_lock_owners_free(c.v, c.n);
		c.v = NULL;
		c.n = 0;
	}
	*v = c.v;
	*n = c.n;
	return c.error;
}

void ufs_lock_owners_free(struct ufs_lock_owner_state *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].fd >= 0)
			close(v[i].fd);
	}
	free(v);
}

int ufs_lock_owner_restore(struct ufs_fs *fs, const struct ufs_lock_owner_state *s)
{
	struct ufs_inode *inode = ufs_inode_get(&fs->inodes, s->nodeid);
	struct ufs_lock_owner *o = inode ? calloc(1, sizeof(*o)) : NULL;

	if (!o) {
		close(s->fd);
		ufs_inode_put(&fs->inodes, inode);
		return inode ? -ENOMEM : -ESTALE;
	}
	o->owner = s->owner;
	o->fd = s->fd;
	o->fh = s->fh;
	o->uid = s->uid;
	o->pid = s->pid;
	/* Held already: charged to the locker without a check, as inherited opens are. */
	o->budget = &fs->budget;
	ufs_budget_force(o->budget, o->uid, 1);
	o->count = &fs->lock_owners;
	__atomic_add_fetch(o->count, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&inode->lock);
	o->next = inode->lock_owners;
	inode->lock_owners = o;
	pthread_mutex_unlock(&inode->lock);
	ufs_inode_put(&fs->inodes, inode);
	return 0;
}
