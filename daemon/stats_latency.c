// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The latency histograms as control file lines (stats_latency.h has the
 * format): only opcodes seen, so an idle mount's file stays short.
 */
#include "decode.h"
#include "stats_latency.h"

/* Upper bound of bucket k in microseconds: 4 us * 4^k. */
static double bound_us(unsigned int k)
{
	return (double)(4ull << (2 * k));
}

/* The q-quantile, interpolated linearly within its bucket. */
static double quantile_us(const uint64_t *hist, uint64_t count, double q)
{
	double rank = q * (double)count;
	uint64_t below = 0;

	for (unsigned int k = 0; k < UFS_LAT_BUCKETS; k++) {
		double lower = k ? bound_us(k - 1) : 0;

		if (hist[k] && (double)(below + hist[k]) >= rank) {
			if (k == UFS_LAT_FINITE)
				return lower; /* past the last bound: as Prometheus does */
			return lower +
			       (bound_us(k) - lower) * (rank - (double)below) / (double)hist[k];
		}
		below += hist[k];
	}
	return 0;
}

static void put_hist(FILE *f, const char *kind, unsigned int op, const uint64_t *hist,
		     uint64_t sum_ns)
{
	const char *name = ufs_opcode_name(op);
	uint64_t count = 0;

	for (unsigned int k = 0; k < UFS_LAT_BUCKETS; k++)
		count += hist[k];
	if (!count)
		return;
	fprintf(f, "latency_%s_", kind);
	for (; *name; name++)
		fputc(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name, f);
	fprintf(f, " count=%llu sum_ns=%llu p50_us=%.0f p99_us=%.0f buckets=",
		(unsigned long long)count, (unsigned long long)sum_ns,
		quantile_us(hist, count, 0.5), quantile_us(hist, count, 0.99));
	for (unsigned int k = 0; k < UFS_LAT_BUCKETS; k++)
		fprintf(f, "%s%llu", k ? "," : "", (unsigned long long)hist[k]);
	fputc('\n', f);
}

void ufs_stats_latency(FILE *f, const struct ufs_stats *total)
{
	const struct ufs_latency *lat = &total->lat;

	for (unsigned int op = 1; op < UFS_OPCODE_MAX; op++) {
		if (ufs_op_desc(op) && ufs_opcode_name(op))
			put_hist(f, "request", op, lat->request[op], lat->request_ns[op]);
	}
	for (unsigned int op = 1; op < UFS_OPCODE_MAX; op++) {
		if (ufs_op_desc(op) && ufs_opcode_name(op))
			put_hist(f, "backing", op, lat->backing[op], lat->backing_ns[op]);
	}
}
