/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the probe benchmarks share: a clock, a file of a given size, and the
 * sort of the waits for their percentiles.
 */
#ifndef UFS_PROBE_UTIL_H
#define UFS_PROBE_UTIL_H

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static inline double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* path, size bytes of fill (a multiple of 1 MiB, or less than one), synced. */
static inline int make_file(const char *path, size_t size, char fill)
{
	static char buf[1 << 20];
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	if (fd < 0)
		return -1;
	memset(buf, fill, sizeof(buf));
	for (size_t done = 0; done < size; done += sizeof(buf)) {
		size_t n = size - done < sizeof(buf) ? size - done : sizeof(buf);

		if (write(fd, buf, n) != (ssize_t)n) {
			close(fd);
			return -1;
		}
	}
	fsync(fd);
	return close(fd);
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif /* UFS_PROBE_UTIL_H */
