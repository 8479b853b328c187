/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The latency histograms (counters.h: struct ufs_latency) as control file
 * lines, one per opcode seen and histogram:
 *
 *   latency_request_lookup count=40 sum_ns=812345 p50_us=13 p99_us=61 buckets=0,31,9,0,...
 *
 * buckets= holds each bucket's own count (not cumulative), bucket k for
 * durations <= 4 us * 4^k, the last for longer ones; p50/p99 are
 * interpolated within their bucket as Prometheus's histogram_quantile()
 * does.  stats_prom.c turns these lines into Prometheus histograms.
 */
#ifndef UFS_STATS_LATENCY_H
#define UFS_STATS_LATENCY_H

#include <stdio.h>

#include "counters.h"

void ufs_stats_latency(FILE *f, const struct ufs_stats *total);

#endif /* UFS_STATS_LATENCY_H */
