/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-worker counters (summed and printed by stats.c).  Each worker
 * owns its struct ufs_stats and is its only writer, except for requests
 * completed on helper threads; all updates are relaxed atomics so readers
 * (the control file, SIGUSR1, sd_notify STATUS=) can sum them at any time
 * without locks.
 */
#ifndef UFS_COUNTERS_H
#define UFS_COUNTERS_H

#include <stdint.h>

#define UFS_OPCODE_MAX 64

/*
 * Latency buckets: bucket k counts durations <= 4 us * 4^k (4 us, 16 us,
 * 64 us, ... 16.8 s), the last one everything longer (+Inf).
 */
#define UFS_LAT_FINITE 12
#define UFS_LAT_BUCKETS (UFS_LAT_FINITE + 1)

/*
 * Per-opcode latency histograms (stats_latency.c prints them):
 * request: from the request's arrival in the dispatcher to the moment its
 * reply goes to the transport (dispatch.c: ufs_req_replied), on whatever
 * thread replies; backing: the time inside the ufs_op_* handler on the
 * worker (for a handler that queues its request, only until it queued).
 */
struct ufs_latency {
	uint64_t request[UFS_OPCODE_MAX][UFS_LAT_BUCKETS];
	uint64_t request_ns[UFS_OPCODE_MAX];
	uint64_t backing[UFS_OPCODE_MAX][UFS_LAT_BUCKETS];
	uint64_t backing_ns[UFS_OPCODE_MAX];
};

struct ufs_stats {
	uint64_t requests[UFS_OPCODE_MAX];	/* by opcode; [0] counts unknown ones */
	uint64_t requests_ring;
	uint64_t requests_dev;
	uint64_t requests_replayed;		/* resent by the kernel, or adopted after a crash */
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t errors;			/* replies with an error */
	uint64_t bad_requests;			/* refused by the decoder */
	uint64_t interrupts;
	uint64_t zc_reads, zc_read_bytes;
	uint64_t zc_writes, zc_write_bytes;
	uint64_t bounce_reads, bounce_writes;
	uint64_t copied_reads, copied_writes;
	uint64_t cfr_ring, cfr_thread, cfr_sync, cfr_cancelled, cfr_bytes;
	uint64_t cfr_fallback;			/* copies handed back to the kernel (copy.c) */
	uint64_t fallbacks;
	uint64_t opens_passthrough, opens_zero_copy, opens_copy;	/* by data path */
	uint64_t pt_refused[7];			/* enum ufs_pt_refusal (passthrough.h) */
	struct ufs_latency lat;
};

static inline void ufs_stat_add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static inline uint64_t ufs_stat_read(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* The bucket of a duration: the smallest k with ns <= 4 us * 4^k. */
static inline unsigned int ufs_lat_bucket(uint64_t ns)
{
	uint64_t us = (ns + 999) / 1000;	/* rounded up: the bounds are "<=" */
	unsigned int k;

	if (us <= 4)
		return 0;
	/* 4^(k+1) >= us  <=>  us - 1 < 2^(2k+2)  <=>  bits(us - 1) <= 2k + 2 */
	k = (unsigned int)(64 - __builtin_clzll(us - 1) - 1) / 2;
	return k < UFS_LAT_FINITE ? k : UFS_LAT_FINITE;
}

/* One duration into a histogram of hists[UFS_OPCODE_MAX] and its sums. */
static inline void ufs_lat_add(uint64_t (*hists)[UFS_LAT_BUCKETS], uint64_t *sums, uint32_t opcode,
			       uint64_t ns)
{
	unsigned int op = opcode < UFS_OPCODE_MAX ? opcode : 0;

	ufs_stat_add(&hists[op][ufs_lat_bucket(ns)], 1);
	ufs_stat_add(&sums[op], ns);
}

#endif /* UFS_COUNTERS_H */
