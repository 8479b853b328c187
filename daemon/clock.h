/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The request clock: CLOCK_MONOTONIC in nanoseconds (a vDSO read, no
 * system call), for a request's arrival (struct ufs_req: arrived_ns), the
 * latency histograms (counters.h), the in-flight table and the slow
 * request watch.
 */
#ifndef UFS_CLOCK_H
#define UFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ufs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* UFS_CLOCK_H */
