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

/* v in decimal at p; returns the end.  (snprintf per number is most of a read's cost.) */
static char *put_dec(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static void put_hist(FILE *f, const char *kind, unsigned int op, const uint64_t *hist,
		     uint64_t sum_ns)
{
	/* kind, name (< 32), 4 labelled numbers and 13 buckets of at most 20 digits */
	char line[64 + 4 * 32 + UFS_LAT_BUCKETS * 21], *p = line;
	const char *name = ufs_opcode_name(op);
	uint64_t count = 0;

	for (unsigned int k = 0; k < UFS_LAT_BUCKETS; k++)
		count += hist[k];
	if (!count)
		return;
	p = put_str(p, "latency_");
	p = put_str(p, kind);
	*p++ = '_';
	for (; *name; name++)
		*p++ = *name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name;
	p = put_dec(put_str(p, " count="), count);
	p = put_dec(put_str(p, " sum_ns="), sum_ns);
	p = put_dec(put_str(p, " p50_us="), (uint64_t)(quantile_us(hist, count, 0.5) + 0.5));
	p = put_dec(put_str(p, " p99_us="), (uint64_t)(quantile_us(hist, count, 0.99) + 0.5));
	p = put_str(p, " buckets=");
	for (unsigned int k = 0; k < UFS_LAT_BUCKETS; k++) {
		if (k)
			*p++ = ',';
		p = put_dec(p, hist[k]);
	}
	*p++ = '\n';
	fwrite(line, 1, (size_t)(p - line), f);
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
