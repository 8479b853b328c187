// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The counters in Prometheus's text exposition format (version 0.0.4), for
 * `uringfs --stats MOUNTPOINT --format=prometheus` and node_exporter's
 * textfile collector.  Input is the control file's `name value` lines:
 *
 *   transport uring            -> uringfs_info{...,transport="uring"} 1
 *   inodes 12                  -> uringfs_inodes{...} 12          (gauge)
 *   errors 3                   -> uringfs_errors_total{...} 3     (counter)
 *   op_lookup 40               -> uringfs_requests_total{...,op="lookup"} 40
 *   worker1_errors 2           -> uringfs_worker_errors_total{...,worker="1"} 2
 *   cache_coherence 1          -> uringfs_cache_coherence{...,reason="..."} 1
 *     (the reason from the cache_coherence_reason line)
 *   latency_request_lookup count=40 sum_ns=... buckets=0,31,9,...
 *                              -> uringfs_request_duration_seconds_bucket{...,op="lookup",le=...}
 *                                 (and _sum, _count; latency_backing_*: backing_duration_seconds)
 *
 * Every sample carries mountpoint="...", so one collector directory can hold
 * the files of several mounts.  The format wants each family's samples
 * together, so the per-worker lines are regrouped by counter.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "counters.h"
#include "stats_prom.h"

#define PREFIX "uringfs_"

/* Values that go up and down; every other number only grows. */
static const char *const gauges[] = {
	"workers", "queues", "zero_copy_queues", "backing_ids", "inodes", "export_nodeids",
	"fds_share", "fds_charged", "cache_coherence", "cache_entry_timeout_ms",
	"cache_attr_timeout_ms", "cache_negative_timeout_ms", "inode_limit",
	"inode_prune_short_timeouts", "max_write", "slow_request_ms", "inflight_requests",
	"inflight_oldest_ms", "inflight_withheld", "control_opens",
};

/* A line that labels another one's sample, not the info line. */
#define REASON_LINE "cache_coherence_reason"
/* Histogram lines (stats_latency.h), not the info line's either. */
#define LATENCY_LINE "latency_"

/* The buckets' bounds in seconds: 4 us * 4^k (counters.h). */
static const char *const lat_le[] = {
	"4e-06",    "1.6e-05",	"6.4e-05",  "0.000256", "0.001024", "0.004096", "0.016384",
	"0.065536", "0.262144", "1.048576", "4.194304", "16.777216", "+Inf",
};
_Static_assert(sizeof(lat_le) / sizeof(lat_le[0]) == UFS_LAT_BUCKETS,
	       "one bound per bucket of counters.h");

static const struct {
	const char *kind, *family, *help;
} lat_families[] = {
	{ "request", "request_duration_seconds",
	  "Time from a request's arrival at the daemon to its reply, by opcode." },
	{ "backing", "backing_duration_seconds",
	  "Time inside the request's handler (the backing file system's calls), by opcode." },
};

struct stat_line {
	const char *name;
	const char *value;
};

static bool is_gauge(const char *name)
{
	for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
		if (!strcmp(name, gauges[i]))
			return true;
	}
	return false;
}

static bool is_number(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
	}
	return true;
}

/* "worker12_errors" -> 12 and "errors"; false for anything else. */
static bool worker_counter(const char *name, unsigned long *worker, const char **counter)
{
	char *end;

	if (strncmp(name, "worker", 6) || !isdigit((unsigned char)name[6]))
		return false;
	*worker = strtoul(name + 6, &end, 10);
	if (*end != '_' || !end[1])
		return false;
	*counter = end + 1;
	return true;
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label_value(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(out, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", out);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void put_sample(FILE *out, const char *family, const char *mountpoint,
		       const char *label, const char *label_value, const char *value)
{
	fprintf(out, PREFIX "%s{mountpoint=", family);
	put_label_value(out, mountpoint);
	if (label) {
		fprintf(out, ",%s=", label);
		put_label_value(out, label_value);
	}
	fprintf(out, "} %s\n", value);
}

/* Split text into lines[] in place; returns the count or -errno. */
static int split_lines(char *text, struct stat_line **out)
{
	struct stat_line *lines = NULL;
	size_t n = 0, cap = 0;
	char *line, *save;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strchr(line, ' ');

		if (!sp || sp == line || !sp[1])
			continue;	/* not a `name value` line */
		*sp = '\0';
		if (n == cap) {
			size_t more_cap = cap ? 2 * cap : 128;
			struct stat_line *more = realloc(lines, more_cap * sizeof(*lines));

			if (!more) {
				free(lines);
				return -ENOMEM;
			}
			lines = more;
			cap = more_cap;
		}
		lines[n].name = line;
		lines[n].value = sp + 1;
		n++;
	}
	*out = lines;
	return (int)n;
}

static void put_info(FILE *out, const struct stat_line *lines, int n, const char *mountpoint)
{
	fputs("# HELP " PREFIX "info The daemon's settings and state, as labels.\n"
	      "# TYPE " PREFIX "info gauge\n" PREFIX "info{mountpoint=", out);
	put_label_value(out, mountpoint);
	for (int i = 0; i < n; i++) {
		if (is_number(lines[i].value) || !strcmp(lines[i].name, REASON_LINE) ||
		    !strncmp(lines[i].name, LATENCY_LINE, strlen(LATENCY_LINE)))
			continue;
		fprintf(out, ",%s=", lines[i].name);
		put_label_value(out, lines[i].value);
	}
	fputs("} 1\n", out);
}

static void put_scalars(FILE *out, const struct stat_line *lines, int n, const char *mountpoint)
{
	unsigned long worker;
	const char *counter;

	for (int i = 0; i < n; i++) {
		const char *name = lines[i].name;
		char family[96];

		if (!is_number(lines[i].value) || !strncmp(name, "op_", 3) ||
		    worker_counter(name, &worker, &counter))
			continue;
		if (is_gauge(name))
			snprintf(family, sizeof(family), "%s", name);
		else
			snprintf(family, sizeof(family), "%s_total", name);
		fprintf(out, "# TYPE " PREFIX "%s %s\n", family, is_gauge(name) ? "gauge" : "counter");
		if (!strcmp(name, "cache_coherence")) {
			const char *reason = "";

			for (int j = 0; j < n; j++)
				if (!strcmp(lines[j].name, REASON_LINE))
					reason = lines[j].value;
			put_sample(out, family, mountpoint, "reason", reason, lines[i].value);
			continue;
		}
		put_sample(out, family, mountpoint, NULL, NULL, lines[i].value);
	}
}

static void put_requests(FILE *out, const struct stat_line *lines, int n, const char *mountpoint)
{
	bool first = true;

	for (int i = 0; i < n; i++) {
		if (strncmp(lines[i].name, "op_", 3) || !is_number(lines[i].value))
			continue;
		if (first)
			fputs("# HELP " PREFIX "requests_total Requests from the kernel, by opcode.\n"
			      "# TYPE " PREFIX "requests_total counter\n", out);
		first = false;
		put_sample(out, "requests_total", mountpoint, "op", lines[i].name + 3,
			   lines[i].value);
	}
}

/* Each per-worker counter once, with every worker's sample under it. */
static void put_workers(FILE *out, const struct stat_line *lines, int n, const char *mountpoint)
{
	unsigned long worker, other;
	const char *counter, *c2;

	for (int i = 0; i < n; i++) {
		bool seen = false;
		char family[96];

		if (!worker_counter(lines[i].name, &worker, &counter) ||
		    !is_number(lines[i].value))
			continue;
		for (int j = 0; j < i && !seen; j++)
			seen = worker_counter(lines[j].name, &other, &c2) && !strcmp(c2, counter);
		if (seen)
			continue;
		snprintf(family, sizeof(family), "worker_%s_total", counter);
		fprintf(out, "# TYPE " PREFIX "%s counter\n", family);
		for (int j = i; j < n; j++) {
			char id[24];

			if (!worker_counter(lines[j].name, &other, &c2) || strcmp(c2, counter) ||
			    !is_number(lines[j].value))
				continue;
			snprintf(id, sizeof(id), "%lu", other);
			put_sample(out, family, mountpoint, "worker", id, lines[j].value);
		}
	}
}

/* The value of key= in a histogram line, or NULL. */
static const char *field(const char *value, const char *key)
{
	size_t len = strlen(key);

	for (const char *p = value; p && *p; p = strchr(p, ' '), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, len) && p[len] == '=')
			return p + len + 1;
	}
	return NULL;
}

static void put_hist_sample(FILE *out, const char *family, const char *suffix,
			    const char *mountpoint, const char *op, const char *le)
{
	fprintf(out, PREFIX "%s%s{mountpoint=", family, suffix);
	put_label_value(out, mountpoint);
	fputs(",op=", out);
	put_label_value(out, op);
	if (le)
		fprintf(out, ",le=\"%s\"", le);
	fputs("} ", out);
}

/* One opcode's histogram; false if the line is not one. */
static bool put_hist(FILE *out, const char *family, const char *mountpoint, const char *op,
		     const char *value)
{
	const char *buckets = field(value, "buckets"), *sum = field(value, "sum_ns");
	unsigned long long n[sizeof(lat_le) / sizeof(lat_le[0])], cum = 0;
	const char *p = buckets;
	char *end;

	if (!buckets || !sum)
		return false;
	for (size_t k = 0; k < sizeof(lat_le) / sizeof(lat_le[0]); k++) {
		if (!isdigit((unsigned char)*p))
			return false;
		n[k] = strtoull(p, &end, 10);
		p = *end == ',' ? end + 1 : end;
	}
	for (size_t k = 0; k < sizeof(lat_le) / sizeof(lat_le[0]); k++) {
		cum += n[k];
		put_hist_sample(out, family, "_bucket", mountpoint, op, lat_le[k]);
		fprintf(out, "%llu\n", cum);
	}
	put_hist_sample(out, family, "_sum", mountpoint, op, NULL);
	fprintf(out, "%.9f\n", (double)strtoull(sum, NULL, 10) / 1e9);
	put_hist_sample(out, family, "_count", mountpoint, op, NULL);
	fprintf(out, "%llu\n", cum);
	return true;
}

static void put_latency(FILE *out, const struct stat_line *lines, int n, const char *mountpoint)
{
	for (size_t f = 0; f < sizeof(lat_families) / sizeof(lat_families[0]); f++) {
		char prefix[32];
		bool first = true;

		snprintf(prefix, sizeof(prefix), LATENCY_LINE "%s_", lat_families[f].kind);
		for (int i = 0; i < n; i++) {
			if (strncmp(lines[i].name, prefix, strlen(prefix)))
				continue;
			if (first)
				fprintf(out, "# HELP " PREFIX "%s %s\n# TYPE " PREFIX "%s histogram\n",
					lat_families[f].family, lat_families[f].help,
					lat_families[f].family);
			first = false;
			put_hist(out, lat_families[f].family, mountpoint,
				 lines[i].name + strlen(prefix), lines[i].value);
		}
	}
}

int ufs_stats_prometheus(const char *text, const char *mountpoint, FILE *out)
{
	struct stat_line *lines;
	char *copy = strdup(text);
	int n;

	if (!copy)
		return -ENOMEM;
	n = split_lines(copy, &lines);
	if (n < 0) {
		free(copy);
		return n;
	}
	put_info(out, lines, n, mountpoint);
	put_scalars(out, lines, n, mountpoint);
	put_requests(out, lines, n, mountpoint);
	put_latency(out, lines, n, mountpoint);
	put_workers(out, lines, n, mountpoint);
	free(lines);
	free(copy);
	return ferror(out) ? -EIO : 0;
}
