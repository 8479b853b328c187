// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The probe benchmark after the copy_file_range RFC's model: COPIES queued
 * 16 MiB copies in DIR while a probe does small stats and reads there; the
 * probe's waits are what a copy must not hold up.
 *
 *   cfr-probe DIR [COPIES [PROBES]]
 *
 * Prints "p50 p90 p99 max" of the probe's operations in microseconds, and
 * how long the copies took.  With COPIES 0 it measures the probe alone: the
 * floor that waits during copies compare with.  DIR is a uringfs mount
 * (each copy_file_range mode in turn) or the backing directory itself
 * (native).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe-util.h"

#define COPY_SIZE (16u << 20)

struct copier {
	pthread_t thread;
	const char *dir;
	int id;
	ssize_t copied;
};

static volatile int copies_running;

static void *copy_main(void *arg)
{
	struct copier *c = arg;
	char in[4096], out[4096];
	int fi, fo;

	snprintf(in, sizeof(in), "%s/cfr-src", c->dir);
	snprintf(out, sizeof(out), "%s/cfr-dst-%d", c->dir, c->id);
	fi = open(in, O_RDONLY);
	fo = open(out, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fi >= 0 && fo >= 0) {
		loff_t oi = 0, oo = 0;
		size_t left = COPY_SIZE;

		while (left) {
			ssize_t n = copy_file_range(fi, &oi, fo, &oo, left, 0);

			if (n <= 0)
				break;
			left -= n;
			c->copied += n;
		}
	}
	if (fi >= 0)
		close(fi);
	if (fo >= 0)
		close(fo);
	__atomic_fetch_sub(&copies_running, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* One probe: a stat and a small read, as a program checking on a file does. */
static int probe_once(const char *probe_path)
{
	char buf[512];
	struct stat st;
	int fd;

	if (stat(probe_path, &st))
		return -1;
	fd = open(probe_path, O_RDONLY);
	if (fd < 0)
		return -1;
	if (pread(fd, buf, sizeof(buf), 0) < 0) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	int ncopies = argc > 2 ? atoi(argv[2]) : 30;
	int nprobes = argc > 3 ? atoi(argv[3]) : 2000;
	struct copier *copiers;
	char path[4096], probe_path[4096];
	double *waits, start, copies_done = 0;
	int n = 0;

	if (argc < 2 || ncopies < 0 || nprobes < 1) {
		fprintf(stderr, "usage: cfr-probe DIR [COPIES [PROBES]]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/cfr-src", argv[1]);
	snprintf(probe_path, sizeof(probe_path), "%s/cfr-probe", argv[1]);
	if (make_file(path, COPY_SIZE, 'c') || make_file(probe_path, 1 << 20, 'c')) {
		perror("cfr-probe: setting up");
		return 1;
	}
	copiers = calloc(ncopies, sizeof(*copiers));
	waits = calloc(nprobes, sizeof(*waits));
	copies_running = ncopies;
	start = now_us();
	for (int i = 0; i < ncopies; i++) {
		copiers[i] = (struct copier){ .dir = argv[1], .id = i };
		pthread_create(&copiers[i].thread, NULL, copy_main, &copiers[i]);
	}
	/* Probe while the copies are queued or running (without copies: the idle floor). */
	while (n < nprobes && (!ncopies || __atomic_load_n(&copies_running, __ATOMIC_ACQUIRE))) {
		double t = now_us();

		if (probe_once(probe_path)) {
			perror("cfr-probe: probe");
			return 1;
		}
		waits[n++] = now_us() - t;
	}
	for (int i = 0; i < ncopies; i++)
		pthread_join(copiers[i].thread, NULL);
	copies_done = now_us() - start;
	if (!n) {
		fprintf(stderr, "cfr-probe: the copies ended before the first probe\n");
		return 1;
	}
	qsort(waits, n, sizeof(*waits), cmp_double);
	printf("probes=%d p50_us=%.0f p90_us=%.0f p99_us=%.0f max_us=%.0f copies_ms=%.0f\n", n,
	       waits[n / 2], waits[n * 9 / 10], waits[n * 99 / 100], waits[n - 1],
	       copies_done / 1e3);
	for (int i = 0; i < ncopies; i++) {
		char out[4096];

		snprintf(out, sizeof(out), "%s/cfr-dst-%d", argv[1], i);
		unlink(out);
		if (copiers[i].copied != COPY_SIZE)
			fprintf(stderr, "cfr-probe: copy %d moved %zd bytes\n", i, copiers[i].copied);
	}
	unlink(path);
	unlink(probe_path);
	free(copiers);
	free(waits);
	return 0;
}
