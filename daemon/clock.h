/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The clock requests are timed with: CLOCK_MONOTONIC, in nanoseconds
 * (a request's arrived_ns, the in-flight table, the slow request watch).
 */
#ifndef UFS_CLOCK_H
#define UFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ufs_now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

#endif /* UFS_CLOCK_H */
