// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ufs_workers_await (worker.c): waiting until the other workers are done
 * with what they had taken from their transport.  Each fake worker is a
 * real thread in a state a worker can be in: asleep waiting for requests,
 * serving one, or woken with requests and not yet serving them.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"
#include "tap.h"

enum fake_kind {
	ASLEEP,		/* waiting, blocked in read(2) */
	SERVING,	/* took a request, serves until told (blocked, not runnable) */
	WOKEN,		/* waiting phase but runnable: just handed requests */
};

struct fake {
	struct ufs_worker w;
	enum fake_kind kind;
	int gate[2];		/* a byte here ends what it does */
	bool done;		/* it went back to waiting (atomic) */
};

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	char c;

	__atomic_store_n(&f->w.tid, gettid(), __ATOMIC_RELEASE);
	if (f->kind == SERVING) {
		ufs_worker_waiting(&f->w);
		ufs_worker_serving(&f->w);
		if (read(f->gate[0], &c, 1) != 1)	/* asleep while serving */
			return NULL;
	} else if (f->kind == WOKEN) {
		ufs_worker_waiting(&f->w);
		while (!__atomic_load_n(&f->done, __ATOMIC_ACQUIRE) &&
		       read(f->gate[0], &c, 1) != 1)
			;	/* the pipe is non-blocking: runnable throughout */
		ufs_worker_serving(&f->w);
	}
	__atomic_store_n(&f->done, true, __ATOMIC_RELEASE);
	ufs_worker_waiting(&f->w);
	if (read(f->gate[0], &c, 1) != 1) {	/* asleep waiting for more */
	}
	return NULL;
}

static void fake_start(struct fake *f, enum fake_kind kind)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	if (pipe(f->gate))
		return;
	if (kind == WOKEN) {
		int fl = O_NONBLOCK;

		fcntl(f->gate[0], F_SETFL, fl);
	}
	pthread_create(&f->w.thread, NULL, fake_main, f);
	f->w.started = true;
	while (!__atomic_load_n(&f->w.tid, __ATOMIC_ACQUIRE))
		usleep(100);
	usleep(20000);	/* in its state */
}

static void fake_stop(struct fake *f)
{
	if (write(f->gate[1], "xx", 2) < 0) {
	}
	if (f->kind == WOKEN)
		__atomic_store_n(&f->done, true, __ATOMIC_RELEASE);
	if (write(f->gate[1], "x", 1) < 0) {
	}
	pthread_join(f->w.thread, NULL);
	close(f->gate[0]);
	close(f->gate[1]);
}

static bool never(void *arg)
{
	(void)arg;
	return false;
}

static bool always(void *arg)
{
	(void)arg;
	return true;
}

struct end_later {
	struct fake *f;
	unsigned int ms;
};

static void *end_later_main(void *arg)
{
	struct end_later *e = arg;
	char c = 'x';

	usleep(e->ms * 1000);
	if (write(e->f->gate[1], &c, 1) < 0) {
	}
	return NULL;
}

static uint64_t in_ms(unsigned int ms)
{
	return ufs_monotonic_ns() + (uint64_t)ms * 1000000u;
}

int main(void)
{
	struct fake f[2];
	struct end_later later;
	pthread_t t;
	uint64_t start;

	fake_start(&f[0], ASLEEP);
	start = ufs_monotonic_ns();
	ok(ufs_workers_await(&f[0].w, 1, never, NULL, in_ms(10000)),
	   "a worker asleep waiting for requests holds none");
	ok(ufs_monotonic_ns() - start < 5000000000ull, "at once, not at the deadline");
	fake_stop(&f[0]);

	fake_start(&f[0], SERVING);
	start = ufs_monotonic_ns();
	ok(!ufs_workers_await(&f[0].w, 1, never, NULL, in_ms(200)),
	   "one serving what it took (asleep in it) is waited for, to the deadline");
	ok(ufs_monotonic_ns() - start >= 200000000ull, "the whole time");
	ok(ufs_workers_await(&f[0].w, 1, always, NULL, in_ms(10000)),
	   "unless the caller has what it waited for");
	later = (struct end_later){ .f = &f[0], .ms = 100 };
	pthread_create(&t, NULL, end_later_main, &later);
	ok(ufs_workers_await(&f[0].w, 1, never, NULL, in_ms(10000)),
	   "done once it goes back to waiting");
	ok(__atomic_load_n(&f[0].done, __ATOMIC_ACQUIRE), "and not before");
	pthread_join(t, NULL);
	fake_stop(&f[0]);

	fake_start(&f[0], WOKEN);
	fake_start(&f[1], ASLEEP);
	later = (struct end_later){ .f = &f[0], .ms = 100 };
	pthread_create(&t, NULL, end_later_main, &later);
	ok(ufs_workers_await(&f[0].w, 1, never, NULL, in_ms(10000)),
	   "one woken with requests, not yet serving them: waited for");
	ok(__atomic_load_n(&f[0].done, __ATOMIC_ACQUIRE), "until it served them");
	pthread_join(t, NULL);
	fake_stop(&f[0]);
	fake_stop(&f[1]);

	/* The caller itself, serving: never waited for. */
	memset(&f[0], 0, sizeof(f[0]));
	f[0].w.thread = pthread_self();
	f[0].w.started = true;
	f[0].w.tid = gettid();
	ufs_worker_serving(&f[0].w);
	ok(ufs_workers_await(&f[0].w, 1, never, NULL, in_ms(10000)),
	   "the calling worker is not waited for");
	return t_done();
}
