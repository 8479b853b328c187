// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ufs_workers_await (worker.c): an UNLINK waiting until no other worker
 * holds a RELEASE of its file.  Each fake worker is a real thread in a
 * state a worker can be in: asleep in its read, serving a request (a
 * RELEASE of some node id, or another), or just given a request and not
 * yet saying which (runnable in its read).  A batched one (a ring's) reaps
 * many at once and says how many RELEASEs of its batch it has not served.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"
#include "tap.h"

#define NODE 7		/* the unlinked file's node id */

enum fake_kind {
	ASLEEP,		/* waiting, blocked in read(2) */
	SERVING,	/* serving a RELEASE of release_of (0: another request), asleep in it */
	WOKEN,		/* waiting phase but runnable: just given a RELEASE of NODE */
	ROUNDS,		/* batched, serving, runnable; each poke: one more wait and batch */
};

struct fake {
	struct ufs_worker w;
	enum fake_kind kind;
	uint64_t release_of;
	int gate[2];		/* a byte here ends what it does */
	bool done;		/* it went back to waiting after (atomic) */
	unsigned int rounds;	/* ROUNDS: batches taken since it started (atomic) */
};

/* A ring worker that never sleeps: each poke, it waits (not asleep) and reaps again. */
static void fake_rounds(struct fake *f)
{
	char c;

	for (;;) {
		ssize_t n = read(f->gate[0], &c, 1);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			return;
		if (n == 1 && c == 'q')
			return;
		if (n == 1) {	/* counted before the wait: a caller done sees it */
			__atomic_add_fetch(&f->rounds, 1, __ATOMIC_ACQ_REL);
			ufs_worker_waiting(&f->w);
			ufs_worker_serving(&f->w, 0);
		}
	}
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;
	char c;

	__atomic_store_n(&f->w.tid, gettid(), __ATOMIC_RELEASE);
	ufs_worker_waiting(&f->w);
	if (f->kind == ROUNDS) {
		ufs_worker_serving(&f->w, 0);
		fake_rounds(f);
		ufs_worker_left(&f->w);
		return NULL;
	}
	if (f->kind == SERVING) {
		ufs_worker_serving(&f->w, f->release_of);
		if (read(f->gate[0], &c, 1) != 1)	/* asleep while serving */
			return NULL;
	} else if (f->kind == WOKEN) {
		while (read(f->gate[0], &c, 1) != 1)
			;	/* non-blocking: runnable throughout */
		ufs_worker_serving(&f->w, NODE);
	}
	if (f->kind != ASLEEP) {
		__atomic_store_n(&f->done, true, __ATOMIC_RELEASE);
		ufs_worker_waiting(&f->w);
		fcntl(f->gate[0], F_SETFL, 0);
	}
	if (read(f->gate[0], &c, 1) != 1) {	/* asleep waiting for more */
	}
	ufs_worker_left(&f->w);
	return NULL;
}

/* In its state before anything is asked of it: no sleep that a loaded box could outlast. */
static bool fake_ready(struct fake *f)
{
	pid_t tid = __atomic_load_n(&f->w.tid, __ATOMIC_ACQUIRE);
	enum ufs_worker_phase phase = __atomic_load_n(&f->w.phase, __ATOMIC_ACQUIRE);

	if (!tid || __atomic_load_n(&f->w.waits, __ATOMIC_ACQUIRE) != 1)
		return false;
	if (f->kind == WOKEN)
		return phase == UFS_WORKER_WAITING;
	if (f->kind == ROUNDS)
		return phase == UFS_WORKER_SERVING;
	return phase == (f->kind == ASLEEP ? UFS_WORKER_WAITING : UFS_WORKER_SERVING) &&
	       ufs_thread_state(tid) == 'S';
}

static void fake_start_as(struct fake *f, enum fake_kind kind, uint64_t release_of, bool batched)
{
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->release_of = release_of;
	f->w.batched = batched;
	if (pipe(f->gate))
		return;
	if (kind == WOKEN || kind == ROUNDS)
		fcntl(f->gate[0], F_SETFL, O_NONBLOCK);
	f->w.started = true;
	pthread_create(&f->w.thread, NULL, fake_main, f);
	while (!fake_ready(f))
		usleep(1000);
}

static void fake_start(struct fake *f, enum fake_kind kind, uint64_t release_of)
{
	fake_start_as(f, kind, release_of, false);
}

static void fake_poke(struct fake *f)
{
	if (write(f->gate[1], "x", 1) != 1) {
	}
}

static void fake_stop(struct fake *f)
{
	if (f->kind == ROUNDS && write(f->gate[1], "q", 1) != 1) {
	}
	fake_poke(f);
	fake_poke(f);
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

static void *poke_later(void *arg)
{
	usleep(100 * 1000);
	fake_poke(arg);
	return NULL;
}

/* Another round of a ROUNDS worker every 50 ms until it has done 6. */
static void *rounds_later(void *arg)
{
	struct fake *f = arg;

	while (__atomic_load_n(&f->rounds, __ATOMIC_ACQUIRE) < 6) {
		usleep(50 * 1000);
		fake_poke(f);
	}
	return NULL;
}

static uint64_t in_ms(unsigned int ms)
{
	return ufs_monotonic_ns() + (uint64_t)ms * 1000000u;
}

static bool await_one(struct fake *f, uint64_t node, bool (*enough)(void *), unsigned int ms)
{
	return ufs_workers_await(&f->w, 1, node, enough, NULL, in_ms(ms));
}

int main(void)
{
	struct fake f;
	pthread_t t;
	uint64_t start;

	fake_start(&f, ASLEEP, 0);
	start = ufs_monotonic_ns();
	ok(await_one(&f, NODE, never, 10000), "a worker asleep in its read holds no RELEASE");
	ok(ufs_monotonic_ns() - start < 5000000000ull, "at once, not at the deadline");
	fake_stop(&f);

	fake_start(&f, SERVING, 0);
	ok(await_one(&f, NODE, never, 10000), "one serving another request holds none");
	fake_stop(&f);

	fake_start(&f, SERVING, NODE + 1);
	ok(await_one(&f, NODE, never, 10000), "one serving a RELEASE of another file: not waited for");
	fake_stop(&f);

	fake_start(&f, SERVING, NODE);
	start = ufs_monotonic_ns();
	ok(!await_one(&f, NODE, never, 200), "one serving a RELEASE of the file (asleep in its "
	   "close): waited for, to the deadline");
	ok(ufs_monotonic_ns() - start >= 200000000ull, "the whole time");
	ok(await_one(&f, NODE, always, 10000), "unless the caller has what it waited for");
	pthread_create(&t, NULL, poke_later, &f);
	ok(await_one(&f, NODE, never, 10000), "done once it goes back to waiting");
	ok(__atomic_load_n(&f.done, __ATOMIC_ACQUIRE), "and not before");
	pthread_join(t, NULL);
	fake_stop(&f);

	fake_start(&f, WOKEN, 0);
	pthread_create(&t, NULL, poke_later, &f);
	ok(await_one(&f, NODE, never, 10000), "one just given a request, not yet saying which "
	   "(runnable in its read): waited for");
	ok(__atomic_load_n(&f.done, __ATOMIC_ACQUIRE), "until it served it");
	pthread_join(t, NULL);
	fake_stop(&f);
	ok(await_one(&f, NODE, never, 10000), "one that left holds nothing");

	/* A ring's worker: serving one request of a batch, the RELEASE may be next in it. */
	fake_start_as(&f, ASLEEP, 0, true);
	ok(await_one(&f, NODE, never, 10000), "a batched worker asleep waiting holds no RELEASE");
	fake_stop(&f);

	fake_start_as(&f, SERVING, 0, true);
	ok(!await_one(&f, NODE, never, 200), "a batched worker serving another request (asleep "
	   "in it): waited for, to the deadline");
	pthread_create(&t, NULL, poke_later, &f);
	ok(await_one(&f, NODE, never, 10000), "done once it waits again, asleep");
	ok(__atomic_load_n(&f.done, __ATOMIC_ACQUIRE), "and not before");
	pthread_join(t, NULL);
	fake_stop(&f);

	fake_start_as(&f, ROUNDS, 0, true);
	ok(!await_one(&f, NODE, never, 100), "a batched worker never asleep, serving a batch "
	   "taken before the call: waited for");
	pthread_create(&t, NULL, rounds_later, &f);
	ok(await_one(&f, NODE, never, 10000), "done once it serves a batch taken after the "
	   "call, with no RELEASE left in it");
	ok(__atomic_load_n(&f.rounds, __ATOMIC_ACQUIRE) >= 1, "and not before");
	pthread_join(t, NULL);
	fake_stop(&f);

	fake_start_as(&f, ROUNDS, 0, true);
	ufs_worker_hold_releases(&f.w, 1, ufs_release_bit(NODE + 1));
	ok(ufs_release_bit(NODE + 1) != ufs_release_bit(NODE), "two node ids, two bits");
	pthread_create(&t, NULL, rounds_later, &f);
	ok(await_one(&f, NODE, never, 10000), "one whose batch holds a RELEASE of another file: "
	   "done once it serves a batch taken after the call");
	pthread_join(t, NULL);
	fake_stop(&f);

	fake_start_as(&f, ROUNDS, 0, true);
	ufs_worker_hold_releases(&f.w, 1, ufs_release_bit(NODE));
	pthread_create(&t, NULL, rounds_later, &f);
	ok(!await_one(&f, NODE, never, 400), "one whose batch still holds a RELEASE: waited for, "
	   "batch after batch");
	pthread_join(t, NULL);
	__atomic_store_n(&f.w.batch_releases, 0, __ATOMIC_RELEASE);
	ufs_worker_releases_fresh(&f.w);
	ok(!__atomic_load_n(&f.w.releases_of, __ATOMIC_ACQUIRE), "its bits go with the last one");
	pthread_create(&t, NULL, poke_later, &f);
	ok(await_one(&f, NODE, never, 10000), "until it served it");
	pthread_join(t, NULL);
	fake_stop(&f);

	fake_start_as(&f, SERVING, 0, true);
	__atomic_store_n(&f.w.awaiting, true, __ATOMIC_RELEASE);
	start = ufs_monotonic_ns();
	ok(await_one(&f, NODE, never, 10000) && ufs_monotonic_ns() - start < 5000000000ull,
	   "one in this same wait itself is not waited for (two would wait for each other)");
	fake_stop(&f);

	/* The caller itself, serving a RELEASE of the file: never waited for. */
	memset(&f, 0, sizeof(f));
	f.w.thread = pthread_self();
	f.w.started = true;
	f.w.tid = gettid();
	ufs_worker_waiting(&f.w);
	ufs_worker_serving(&f.w, NODE);
	ok(await_one(&f, NODE, never, 10000), "the calling worker is not waited for");
	return t_done();
}
