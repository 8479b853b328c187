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
};

static inline void ufs_stat_add(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static inline uint64_t ufs_stat_read(const uint64_t *counter)
{
	return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

#endif /* UFS_COUNTERS_H */
