// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The copy_file_range seed's own model: COPIES processes, each copying a
 * 16 MiB file with one copy_file_range(2) call after another (a single
 * call per copy, as a naive caller makes it), while a probe process times
 * statx(AT_STATX_FORCE_SYNC) of another file: exactly one GETATTR round
 * trip through a FUSE mount.  The probe's waits are what a copy must not
 * hold up.
 *
 *   cfr-seed DIR COPIES SECONDS
 *
 * The probe's time starts when every copier is in its first call (at most
 * START_LIMIT_S after the forks: a copier that has not opened its files by
 * then is reported, not waited for).
 *
 * Prints one line: probes, p50/p90/p99/max of the probe in microseconds,
 * how long the copiers took to start (start_ms) and how many had started
 * when the probe began (started), the copy calls made, how many returned
 * short, how many failed, and how many copies did not hold the source's
 * bytes: when the time is up every copier finishes the call it is in and
 * compares its copy with the source.  With COPIES 0 it measures the probe
 * alone: the floor.
 *
 * Beside the probe a thread of this process sleeps 1 ms again and again,
 * and the line ends with how late it woke (wake_p50_us, wake_p99_us): what
 * the machine's other work made any thread wait for a CPU in the same
 * seconds, which a round trip through the daemon waits for twice (the
 * daemon's thread, then the probe).  tests/mount/t_copy.py runs it too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe-util.h"

#define COPY_SIZE (16u << 20)
#define MAX_PROBES 2000000
#define START_LIMIT_S 60
#define MAX_WAKES 200000

/* What the copiers report, in memory shared with them. */
struct tally {
	long calls, short_calls, failed_calls, bad_copies;
	long started;			/* copiers that reached their first call */
	int first_errno;
	_Atomic bool stop;		/* the time is up: finish the call, then check */
};

/* The sleeper beside the probe: how late each 1 ms sleep ended. */
struct lateness {
	pthread_t thread;
	_Atomic bool stop;
	double late[MAX_WAKES];
	long n;
};

static void *sleeper(void *arg)
{
	struct lateness *l = arg;
	const struct timespec ms = { .tv_nsec = 1000000 };

	while (!l->stop && l->n < MAX_WAKES) {
		double start = now_us();

		clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL);
		l->late[l->n++] = now_us() - start - 1000;
	}
	return NULL;
}

/* Whether the first len bytes of out are those of in. */
static bool same_bytes(int fi, int fo, size_t len)
{
	static char a[1 << 20], b[1 << 20];

	for (size_t off = 0; off < len; off += sizeof(a)) {
		size_t n = len - off < sizeof(a) ? len - off : sizeof(a);

		if (pread(fi, a, n, off) != (ssize_t)n || pread(fo, b, n, off) != (ssize_t)n ||
		    memcmp(a, b, n))
			return false;
	}
	return true;
}

/* A copier: one single-call 16 MiB copy after another, until told to stop. */
static void copier(const char *dir, int id, struct tally *t)
{
	char in[4096], out[4096];
	ssize_t last = 0;
	int fi, fo;

	/* A probe that fails ends the parent early: its copiers must not outlive it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	snprintf(in, sizeof(in), "%s/seed-src", dir);
	snprintf(out, sizeof(out), "%s/seed-dst-%d", dir, id);
	fi = open(in, O_RDONLY);
	fo = open(out, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fi < 0 || fo < 0) {
		__atomic_fetch_add(&t->failed_calls, 1, __ATOMIC_RELAXED);
		_exit(1);
	}
	__atomic_fetch_add(&t->started, 1, __ATOMIC_RELAXED);
	while (!t->stop) {
		loff_t oi = 0, oo = 0;
		ssize_t n = copy_file_range(fi, &oi, fo, &oo, COPY_SIZE, 0);

		__atomic_fetch_add(&t->calls, 1, __ATOMIC_RELAXED);
		if (n < 0) {
			if (!__atomic_fetch_add(&t->failed_calls, 1, __ATOMIC_RELAXED))
				t->first_errno = errno;
		} else if (n < (ssize_t)COPY_SIZE) {
			__atomic_fetch_add(&t->short_calls, 1, __ATOMIC_RELAXED);
		}
		if (n > 0)
			last = n;
	}
	if (last && !same_bytes(fi, fo, last))
		__atomic_fetch_add(&t->bad_copies, 1, __ATOMIC_RELAXED);
	_exit(0);
}

int main(int argc, char **argv)
{
	int ncopies = argc > 2 ? atoi(argv[2]) : 30;
	double seconds = argc > 3 ? atof(argv[3]) : 3;
	char src[4096], probe[4096];
	static struct lateness wake;
	struct tally *t;
	double *waits, end, start_ms;
	pid_t *pids;
	long n = 0, started;

	if (argc < 2 || ncopies < 0 || seconds <= 0) {
		fprintf(stderr, "usage: cfr-seed DIR COPIES SECONDS\n");
		return 2;
	}
	snprintf(src, sizeof(src), "%s/seed-src", argv[1]);
	snprintf(probe, sizeof(probe), "%s/seed-probe", argv[1]);
	if (make_file(src, COPY_SIZE, 's') || make_file(probe, 4096, 's')) {
		perror("cfr-seed: setting up");
		return 1;
	}
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	waits = calloc(MAX_PROBES, sizeof(*waits));
	pids = calloc(ncopies ? ncopies : 1, sizeof(*pids));
	if (t == MAP_FAILED || !waits || !pids) {
		perror("cfr-seed");
		return 1;
	}
	for (int i = 0; i < ncopies; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("cfr-seed: fork");
			return 1;
		}
		if (!pids[i])
			copier(argv[1], i, t);
	}
	/*
	 * Time the probe next to every copy at once: from when the last copier
	 * has opened its files, and 0.2 s more for its first call to get to the
	 * daemon.  A loaded machine (the suite's other runs) can take seconds
	 * to get 120 processes there.
	 */
	start_ms = now_us();
	end = start_ms + START_LIMIT_S * 1e6;
	while (__atomic_load_n(&t->started, __ATOMIC_RELAXED) < ncopies && now_us() < end)
		usleep(10000);
	start_ms = (now_us() - start_ms) / 1000;
	started = __atomic_load_n(&t->started, __ATOMIC_RELAXED);
	if (ncopies)
		usleep(200000);
	if (pthread_create(&wake.thread, NULL, sleeper, &wake)) {
		perror("cfr-seed: thread");
		return 1;
	}
	end = now_us() + seconds * 1e6;
	while (n < MAX_PROBES && now_us() < end) {
		struct statx stx;
		double start = now_us();

		if (statx(AT_FDCWD, probe, AT_STATX_FORCE_SYNC, STATX_BASIC_STATS, &stx)) {
			perror("cfr-seed: probe");
			for (int i = 0; i < ncopies; i++)
				kill(pids[i], SIGKILL);
			return 1;
		}
		waits[n++] = now_us() - start;
	}
	wake.stop = true;
	pthread_join(wake.thread, NULL);
	t->stop = true;
	for (int i = 0; i < ncopies; i++)
		waitpid(pids[i], NULL, 0);
	qsort(waits, n, sizeof(*waits), cmp_double);
	qsort(wake.late, wake.n, sizeof(*wake.late), cmp_double);
	printf("probes=%ld p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f start_ms=%.0f "
	       "started=%ld calls=%ld short=%ld failed=%ld bad=%ld wake_p50_us=%.0f "
	       "wake_p99_us=%.0f\n",
	       n, waits[n / 2], waits[n * 9 / 10], waits[n * 99 / 100], waits[n - 1], start_ms,
	       started, t->calls, t->short_calls, t->failed_calls, t->bad_copies,
	       wake.n ? wake.late[wake.n / 2] : 0, wake.n ? wake.late[wake.n * 99 / 100] : 0);
	if (t->failed_calls)
		fprintf(stderr, "cfr-seed: %ld copy calls failed, the first with %s\n",
			t->failed_calls, strerror(t->first_errno));
	for (int i = 0; i < ncopies; i++) {
		char out[4096];

		snprintf(out, sizeof(out), "%s/seed-dst-%d", argv[1], i);
		unlink(out);
	}
	unlink(src);
	unlink(probe);
	return 0;
}
