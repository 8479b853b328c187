// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What keeping the latency histograms costs one request, alone: the four
 * clock reads and four relaxed atomic additions dispatch.c adds (arrival,
 * handler start and end, reply), on the daemon's own struct ufs_stats.
 *
 *   cc -O2 -Idaemon bench/latency-cost.c -o /tmp/latency-cost && /tmp/latency-cost
 */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "counters.h"

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 10000000;
	static struct ufs_stats st;
	uint64_t t0, arrived, start;

	t0 = ufs_now_ns();
	for (unsigned long i = 0; i < n; i++) {
		uint32_t op = 1 + i % 40;

		arrived = ufs_now_ns();
		start = ufs_now_ns();
		ufs_lat_add(st.lat.backing, st.lat.backing_ns, op, ufs_now_ns() - start);
		ufs_lat_add(st.lat.request, st.lat.request_ns, op, ufs_now_ns() - arrived);
	}
	printf("%.1f ns per request (%lu requests)\n", (double)(ufs_now_ns() - t0) / (double)n, n);
	return 0;
}
