// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What every worker thread does first, whichever transport it serves, what
 * a copy helper does first, and pausing the workers for a take-over.  How
 * many workers and on which CPUs: daemon_start.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

int ufs_worker_thread_setup(struct ufs_worker *w, const char *role)
{
	char name[16];

	__atomic_store_n(&w->tid, gettid(), __ATOMIC_RELEASE);

	snprintf(name, sizeof(name), "uringfs-%s%u", role, w->id);
	pthread_setname_np(pthread_self(), name);

	/*
	 * A private fs_struct gives this thread its own umask, so creating
	 * calls can apply the caller's umask (FUSE_DONT_MASK) without racing
	 * the other workers.
	 */
	if (unshare(CLONE_FS))
		ufs_log_once(UFS_LOG_WARN, "unshare(CLONE_FS) failed: %m; umask is shared");

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			ufs_warn("worker %u: cannot pin to CPU %d", w->id, w->cpu);
	}
	return 0;
}

void ufs_helper_thread_setup(const struct ufs_worker *w)
{
	/*
	 * Threads inherit their creator's affinity: a long byte copy would
	 * otherwise share the worker's one CPU with the requests it serves.
	 */
	if (CPU_COUNT(w->cpus))
		pthread_setaffinity_np(pthread_self(), sizeof(*w->cpus), w->cpus);
	/*
	 * A copy keeps a CPU busy for as long as it runs; at a lower weight
	 * (nice is per thread on Linux) a worker woken by a request takes
	 * the CPU from it at once instead of waiting for its time slice.
	 */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), UFS_HELPER_NICE))
		ufs_log_once(UFS_LOG_DEBUG, "copy helper: setpriority: %m");
}

/* ---- pausing for a take-over (handover_socket.c) ---- */

void ufs_pause_init(struct ufs_pause *p)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&p->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);	/* deadlines below */
	pthread_cond_init(&p->cond, &attr);
	pthread_condattr_destroy(&attr);
	p->state = UFS_SERVING;
	p->parked = 0;
}

static bool serve_state_may(enum ufs_serve_state from, enum ufs_serve_state to)
{
	switch (from) {
	case UFS_SERVING:
		return to == UFS_SERVE_PAUSED;
	case UFS_SERVE_PAUSED:
		return to == UFS_SERVING || to == UFS_SERVE_HANDED_OVER;
	case UFS_SERVE_HANDED_OVER:
		return false;	/* the successor serves: for good */
	}
	return false;
}

bool ufs_serve_state_set(struct ufs_pause *p, enum ufs_serve_state to)
{
	bool ok;

	pthread_mutex_lock(&p->lock);
	ok = serve_state_may(p->state, to);
	if (ok) {
		__atomic_store_n(&p->state, to, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return ok;
}

bool ufs_worker_pause_point(struct ufs_worker *w)
{
	struct ufs_pause *p = w->pause;
	enum ufs_serve_state state;

	pthread_mutex_lock(&p->lock);
	if (p->state == UFS_SERVE_PAUSED) {
		p->parked++;
		pthread_cond_broadcast(&p->cond);
		while (p->state == UFS_SERVE_PAUSED)
			pthread_cond_wait(&p->cond, &p->lock);
		p->parked--;
	}
	state = p->state;
	if (state == UFS_SERVE_HANDED_OVER) {
		p->gone++;
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	return state == UFS_SERVE_HANDED_OVER;
}

void ufs_worker_set_parked(struct ufs_worker *w, bool parked)
{
	struct ufs_pause *p = w->pause;

	pthread_mutex_lock(&p->lock);
	if (parked)
		p->parked++;
	else
		p->parked--;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

void ufs_worker_gone(struct ufs_worker *w)
{
	struct ufs_pause *p = w->pause;

	pthread_mutex_lock(&p->lock);
	p->gone++;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

int ufs_pause_wait(struct ufs_pause *p, bool gone, unsigned int want, int timeout_ms,
		   void (*nudge)(void *), void *arg)
{
	const unsigned int *count = gone ? &p->gone : &p->parked;
	struct timespec deadline, step;
	int ret = 0;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += timeout_ms / 1000;
	deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&p->lock);
	while (*count < want && !ret) {
		/*
		 * A worker's wake-up signal can land just before it blocks in
		 * read(2): nudge again every 10 ms rather than trust one.
		 */
		pthread_mutex_unlock(&p->lock);
		nudge(arg);
		pthread_mutex_lock(&p->lock);
		clock_gettime(CLOCK_MONOTONIC, &step);
		if (step.tv_sec > deadline.tv_sec ||
		    (step.tv_sec == deadline.tv_sec && step.tv_nsec >= deadline.tv_nsec)) {
			ret = -ETIMEDOUT;
			break;
		}
		step.tv_nsec += 10000000L;
		if (step.tv_nsec >= 1000000000L) {
			step.tv_sec++;
			step.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cond, &p->lock, &step);
	}
	pthread_mutex_unlock(&p->lock);
	return ret;
}

/* ---- waiting for what the other workers took ---- */

uint64_t ufs_monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + now.tv_nsec;
}

char ufs_thread_state(pid_t tid)
{
	char path[64], buf[512];
	const char *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	state = strrchr(buf, ')');	/* the name in parentheses may hold anything */
	return state && state[1] == ' ' ? state[2] : '?';
}

/*
 * A worker asleep ('S') waits in read(2) or io_uring_enter(2).  Anything
 * else, an unreadable state too, may be a worker the kernel has just given
 * a request to (running, preempted, in a page fault copying it out, 'R',
 * 'D'; or woken to run the task work that delivers to a ring).
 */
static bool thread_asleep(pid_t tid)
{
	char state = ufs_thread_state(tid);

	if (state == '?' && errno != ENOENT)	/* ENOENT: the thread left meanwhile */
		ufs_log_once(UFS_LOG_WARN, "cannot read /proc/self/task/%d/stat: an unlink waits "
			     "for the other workers' requests instead", (int)tid);
	return state == 'S';
}

/*
 * Holds no RELEASE of nodeid given to it before the caller looked (its
 * waits counter then: since).  A /dev/fuse worker: it went back to waiting
 * after that, or it serves another request (one read, one request).  A
 * batched worker: it serves a batch reaped after that (which holds every
 * delivery made before: ring_serve.c) with no RELEASE of nodeid (by its
 * bit in releases_of) left unserved.
 * Either: it waits and is asleep, or it is in this wait itself.  Phase and
 * counter are read again after the state, so that an asleep seen while it
 * served (a close that blocks) does not count.
 */
static bool worker_past(const struct ufs_worker *w, uint64_t since, uint64_t nodeid)
{
	pid_t tid = __atomic_load_n(&w->tid, __ATOMIC_ACQUIRE);
	uint64_t waits = __atomic_load_n(&w->waits, __ATOMIC_ACQUIRE);
	enum ufs_worker_phase phase = __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE);

	if (!tid || __atomic_load_n(&w->awaiting, __ATOMIC_ACQUIRE))
		return true;
	if (!w->batched) {
		if (waits != since)
			return true;
		if (phase == UFS_WORKER_SERVING)
			return __atomic_load_n(&w->releasing, __ATOMIC_RELAXED) != nodeid;
	} else {
		bool none_held = !__atomic_load_n(&w->batch_releases, __ATOMIC_ACQUIRE) ||
				 !(__atomic_load_n(&w->releases_of, __ATOMIC_ACQUIRE) &
				   ufs_release_bit(nodeid));

		if (phase == UFS_WORKER_SERVING)
			return none_held && waits != since;
		if (!none_held)
			return false;	/* put aside during a take-over's pause */
	}
	if (!thread_asleep(tid))
		return false;
	return __atomic_load_n(&w->phase, __ATOMIC_ACQUIRE) == UFS_WORKER_WAITING &&
	       __atomic_load_n(&w->waits, __ATOMIC_ACQUIRE) == waits;
}

bool ufs_workers_await(struct ufs_worker *workers, unsigned int n, uint64_t nodeid,
		       bool (*enough)(void *), void *arg, uint64_t deadline)
{
	const uint64_t past = UINT64_MAX;	/* no waits counter gets there */
	struct timespec poll = { .tv_nsec = 50 * 1000 };	/* doubling to 1 ms */
	pthread_t self = pthread_self();
	struct ufs_worker *me = NULL;
	uint64_t *since;
	bool all;

	/* The common case (no open file left): no worker to ask, no /proc to read. */
	if (enough(arg))
		return true;
	since = calloc(n ? n : 1, sizeof(*since));
	if (!since)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		struct ufs_worker *w = &workers[i];

		since[i] = past;
		if (!__atomic_load_n(&w->started, __ATOMIC_ACQUIRE))
			continue;
		if (pthread_equal(w->thread, self))
			me = w;
		else
			since[i] = __atomic_load_n(&w->waits, __ATOMIC_SEQ_CST);
	}
	if (me)
		__atomic_store_n(&me->awaiting, true, __ATOMIC_RELEASE);
	for (;;) {
		all = true;
		for (unsigned int i = 0; i < n; i++) {
			if (since[i] == past)
				continue;
			if (worker_past(&workers[i], since[i], nodeid))
				since[i] = past;	/* what it takes now came later */
			else
				all = false;
		}
		if (all || enough(arg) || ufs_monotonic_ns() >= deadline)
			break;
		nanosleep(&poll, NULL);
		if (poll.tv_nsec < 1000 * 1000)
			poll.tv_nsec *= 2;
	}
	if (me)
		__atomic_store_n(&me->awaiting, false, __ATOMIC_RELEASE);
	free(since);
	return all || enough(arg);
}
