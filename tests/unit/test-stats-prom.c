// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: the control file's counters in Prometheus's text format.
 */
#include <stdlib.h>
#include <string.h>

#include "stats_prom.h"
#include "tap.h"

static char *convert(const char *text, const char *mountpoint)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (ufs_stats_prometheus(text, mountpoint, f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* How many times needle occurs in hay. */
static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A histogram's samples: _bucket, _sum and _count are one family. */
static void strip_histogram_suffix(char *name)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count" };
	size_t n = strlen(name);

	if (!strstr(name, "_duration_seconds_"))
		return;
	for (size_t i = 0; i < 3; i++) {
		size_t m = strlen(suffixes[i]);

		if (n > m && !strcmp(name + n - m, suffixes[i]))
			name[n - m] = '\0';
	}
}

/* Every line is a comment or `name{labels} value`, and a family's samples are together. */
static int well_formed(const char *out)
{
	char families[64][96];
	int nfam = 0;
	char last[96] = "";

	for (const char *line = out; *line;) {
		const char *end = strchr(line, '\n');
		char name[96];
		size_t n;

		if (!end)
			return 0;
		if (*line != '#') {
			n = strcspn(line, "{ ");
			if (!n || n >= sizeof(name) || line[n] != '{' || !memchr(line, '}', end - line))
				return 0;
			memcpy(name, line, n);
			name[n] = '\0';
			strip_histogram_suffix(name);
			if (strcmp(name, last)) {
				for (int i = 0; i < nfam; i++) {
					if (!strcmp(families[i], name))
						return 0;	/* the family came back later */
				}
				if (nfam == 64)
					return 0;
				strcpy(families[nfam++], name);
				strcpy(last, name);
			}
		}
		line = end + 1;
	}
	return 1;
}

int main(void)
{
	const char *text = "transport uring\n"
			   "queue_mode per-entry\n"
			   "workers 2\n"
			   "protocol 7.45\n"
			   "errors 3\n"
			   "inodes 12\n"
			   "op_lookup 40\n"
			   "op_getattr 7\n"
			   "worker0_requests_ring 5\n"
			   "worker0_errors 1\n"
			   "worker1_requests_ring 6\n"
			   "worker1_errors 2\n";
	char *out = convert(text, "/mnt/a \"b\"\\c");

	ok(out != NULL, "converted");
	if (!out)
		return t_done();
	ok(well_formed(out), "every sample is name{labels} value, families contiguous");
	if (!well_formed(out))
		printf("# %s\n", out);
	ok(strstr(out, "uringfs_info{mountpoint=\"/mnt/a \\\"b\\\"\\\\c\",transport=\"uring\","
			"queue_mode=\"per-entry\",protocol=\"7.45\"} 1\n") != NULL,
	   "the words are labels of uringfs_info, the mount point escaped");
	ok(strstr(out, "# TYPE uringfs_workers gauge\n") != NULL, "workers is a gauge");
	ok(strstr(out, "# TYPE uringfs_inodes gauge\n") != NULL, "inodes is a gauge");
	ok(strstr(out, "# TYPE uringfs_errors_total counter\nuringfs_errors_total{") != NULL,
	   "errors is a counter, named _total");
	ok(strstr(out, ",op=\"lookup\"} 40\n") && strstr(out, ",op=\"getattr\"} 7\n"),
	   "op_ lines are uringfs_requests_total by op");
	is_int(count(out, "# TYPE uringfs_requests_total counter"), 1, "one TYPE for the requests");
	is_int(count(out, "# TYPE uringfs_worker_errors_total counter"), 1,
	       "one TYPE per worker counter");
	ok(strstr(out, "uringfs_worker_errors_total{mountpoint=\"/mnt/a \\\"b\\\"\\\\c\","
			"worker=\"1\"} 2\n") != NULL,
	   "per-worker counters labelled by worker");
	is_int(count(out, "uringfs_worker_requests_ring_total{"), 2, "both workers' samples");
	ok(!strstr(out, "uringfs_worker0"), "no worker number in a metric name");
	free(out);

	out = convert("garbage\n\nname value with spaces\n", "/m");
	ok(out && well_formed(out), "lines that are not `name number` do not break the format");
	free(out);

	/* The cache's coherence: a gauge labelled with its reason, the reason no info label. */
	out = convert("cache auto\ncache_coherence 0\n"
		      "cache_coherence_reason fanotify needs CAP_SYS_ADMIN\n"
		      "cache_attr_timeout_ms 1000\ncoherence_events 7\n", "/m");
	ok(out && well_formed(out), "cache lines: well formed");
	ok(out && strstr(out, "# TYPE uringfs_cache_coherence gauge\n"
			      "uringfs_cache_coherence{mountpoint=\"/m\","
			      "reason=\"fanotify needs CAP_SYS_ADMIN\"} 0\n"),
	   "cache_coherence carries its reason as a label");
	ok(out && strstr(out, "uringfs_info{mountpoint=\"/m\",cache=\"auto\"} 1\n"),
	   "the policy is an info label, the reason is not");
	ok(out && strstr(out, "# TYPE uringfs_cache_attr_timeout_ms gauge\n"), "timeouts are gauges");
	ok(out && strstr(out, "uringfs_coherence_events_total{mountpoint=\"/m\"} 7\n"),
	   "the watcher's counters are counters");
	free(out);

	/* Latency lines: histograms with cumulative buckets, +Inf, _sum and _count. */
	out = convert("transport dev\n"
		      "latency_request_lookup count=6 sum_ns=1500000000 p50_us=9 p99_us=16 "
		      "buckets=1,2,0,0,0,0,0,0,0,0,0,0,3\n"
		      "latency_request_getattr count=1 sum_ns=7000 p50_us=5 p99_us=7 "
		      "buckets=0,1,0,0,0,0,0,0,0,0,0,0,0\n"
		      "latency_backing_lookup count=6 sum_ns=20 p50_us=2 p99_us=4 "
		      "buckets=6,0,0,0,0,0,0,0,0,0,0,0,0\n", "/m");
	ok(out && well_formed(out), "latency lines: well formed");
	ok(out && count(out, "# TYPE uringfs_request_duration_seconds histogram\n") == 1 &&
		   count(out, "# HELP uringfs_request_duration_seconds ") == 1 &&
		   count(out, "# TYPE uringfs_backing_duration_seconds histogram\n") == 1,
	   "one HELP and TYPE histogram line per family");
	ok(out && strstr(out, "uringfs_request_duration_seconds_bucket{mountpoint=\"/m\","
			      "op=\"lookup\",le=\"4e-06\"} 1\n"
			      "uringfs_request_duration_seconds_bucket{mountpoint=\"/m\","
			      "op=\"lookup\",le=\"1.6e-05\"} 3\n"),
	   "buckets are cumulative");
	ok(out && strstr(out, "le=\"16.777216\"} 3\n"
			      "uringfs_request_duration_seconds_bucket{mountpoint=\"/m\","
			      "op=\"lookup\",le=\"+Inf\"} 6\n"
			      "uringfs_request_duration_seconds_sum{mountpoint=\"/m\","
			      "op=\"lookup\"} 1.500000000\n"
			      "uringfs_request_duration_seconds_count{mountpoint=\"/m\","
			      "op=\"lookup\"} 6\n"),
	   "+Inf is the count, _sum in seconds");
	ok(out && count(out, "le=") == 3 * 13, "13 buckets per histogram");
	ok(out && strstr(out, "uringfs_info{mountpoint=\"/m\",transport=\"dev\"} 1\n"),
	   "latency lines are no info labels");
	free(out);
	return t_done();
}
