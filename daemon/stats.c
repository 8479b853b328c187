// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Counters, summed and printed as `name value` lines: the control file,
 * `uringfs --stats`, SIGUSR1 and the systemd STATUS= line all read them here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coherence.h"
#include "daemon.h"
#include "decode.h"
#include "log.h"
#include "inode_prune.h"
#include "slow.h"
#include "stats.h"
#include "stats_latency.h"

void ufs_stats_sum(struct ufs_stats *dst, const struct ufs_stats *src)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	_Static_assert(sizeof(*src) % sizeof(uint64_t) == 0, "stats are u64 only");
	for (size_t i = 0; i < sizeof(*src) / sizeof(uint64_t); i++)
		d[i] += ufs_stat_read(&s[i]);
}

void ufs_stats_total(struct ufs_daemon *d, struct ufs_stats *total)
{
	memset(total, 0, sizeof(*total));
	for (unsigned int i = 0; i < d->nworkers; i++)
		ufs_stats_sum(total, &d->workers[i].stats);
	if (d->transport == UFS_TRANSPORT_URING)
		ufs_stats_sum(total, &d->dev_reader.stats);
}

static void put_counters(FILE *f, const char *prefix, const struct ufs_stats *st)
{
	fprintf(f, "%srequests_ring %llu\n", prefix, (unsigned long long)st->requests_ring);
	fprintf(f, "%srequests_dev %llu\n", prefix, (unsigned long long)st->requests_dev);
	fprintf(f, "%sread_bytes %llu\n", prefix, (unsigned long long)st->read_bytes);
	fprintf(f, "%swrite_bytes %llu\n", prefix, (unsigned long long)st->write_bytes);
	fprintf(f, "%serrors %llu\n", prefix, (unsigned long long)st->errors);
}

static void put_u64(FILE *f, const char *name, uint64_t v)
{
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/* "op_lookup 12": every opcode we know, so the set of names never changes. */
static void put_op(FILE *f, unsigned int op, uint64_t count)
{
	const char *name = ufs_op_desc(op) ? ufs_opcode_name(op) : NULL;

	if (!name)
		return;
	fputs("op_", f);
	for (; *name; name++)
		fputc(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name, f);
	fprintf(f, " %llu\n", (unsigned long long)count);
}

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

/* The cache policy, whether coherent and why, the timeouts in effect, the watcher's counters. */
static void put_cache(FILE *f, const struct ufs_coherence *c)
{
	const struct ufs_cache_timeouts *t = ufs_coherence_timeouts(c, c->dev);

	fprintf(f, "cache %s\n", ufs_cache_policy_name(c->policy));
	put_u64(f, "cache_coherence", ufs_coherence_active(c));
	fprintf(f, "cache_coherence_reason %s\n", c->why);
	put_u64(f, "cache_entry_timeout_ms", (uint64_t)(t->entry * 1000));
	put_u64(f, "cache_attr_timeout_ms", (uint64_t)(t->attr * 1000));
	put_u64(f, "cache_negative_timeout_ms", (uint64_t)(t->negative * 1000));
	put_u64(f, "coherence_events", load(&c->events));
	put_u64(f, "coherence_invalidations", load(&c->invalidations));
	put_u64(f, "coherence_echoes", load(&c->echoes));
	put_u64(f, "coherence_ignored", load(&c->ignored));
	put_u64(f, "coherence_coalesced", load(&c->coalesced));
	put_u64(f, "coherence_overflows", load(&c->overflows));
}

/*
 * What the start-up lines say and the lines above do not: a detached
 * daemon's start-up lines go to syslog only, so --stats must show them.
 */
static void put_start(FILE *f, struct ufs_daemon *d)
{
	const char *why = "none";

	/* The kernel offered io_uring and the ring failed: served over /dev/fuse. */
	if (d->transport == UFS_TRANSPORT_DEV)
		why = d->conn.uring ? "setup-failed" :
		      d->conn.uring_off_reason ? d->conn.uring_off_reason : "none";
	fprintf(f, "version %s\n", PACKAGE_VERSION);
	fprintf(f, "config %s\n", d->cfg.config_path[0] ? d->cfg.config_path : "none");
	put_u64(f, "max_write", d->conn.max_write);
	fprintf(f, "transport_reason %s\n", why);
	fprintf(f, "cfr_reason %s\n", d->cfr_why ? d->cfr_why : "none");
	fprintf(f, "idmap %s\n", d->conn.idmap ? "on" : "off");
	fprintf(f, "idmap_reason %s\n", d->conn.idmap_off_reason ? d->conn.idmap_off_reason : "none");
}

/* The control file's opens held by ordinary users, and those refused (control_opens.h). */
static void put_control_opens(FILE *f, struct ufs_fs *fs)
{
	unsigned int open;
	uint64_t refused;

	ufs_control_opens_count(&fs->control_opens, &open, &refused);
	put_u64(f, "control_opens", open);
	put_u64(f, "control_opens_refused", refused);
}

/* Why the hand-over record is not kept (main.c's start_fresh), or "none". */
static const char *handover_why(struct ufs_daemon *d)
{
	if (ufs_record_kept(&d->record))
		return "none";
	if (!d->cfg.handover)
		return "handover=off";
	if (!d->fs.inodes.handles.usable)
		return "no file handles (inode_handles_reason)";
	return "the hand-over record could not be made";
}

/* Requests that found their worker's in-flight table full (inflight.h). */
static uint64_t inflight_untracked(struct ufs_daemon *d)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < d->nworkers; i++)
		n += __atomic_load_n(&d->workers[i].inflight.untracked, __ATOMIC_RELAXED);
	if (d->transport == UFS_TRANSPORT_URING)
		n += __atomic_load_n(&d->dev_reader.inflight.untracked, __ATOMIC_RELAXED);
	return n;
}

char *ufs_stats_text(struct ufs_daemon *d, bool all, uid_t uid, size_t *len)
{
	/* Some 15 KiB with the latency histograms: not on a small thread stack. */
	struct ufs_stats *sum = malloc(sizeof(*sum));
	struct ufs_exports exports;
	char *buf = NULL;
	size_t size = 0;
	FILE *f;

	if (!sum)
		return NULL;
	f = open_memstream(&buf, &size);
	if (!f) {
		free(sum);
		return NULL;
	}
	ufs_stats_total(d, sum);
	fprintf(f, "transport %s\n", d->transport == UFS_TRANSPORT_URING ? "uring" : "dev");
	fprintf(f, "queue_mode %s\n", ufs_queue_mode_name(d->queue_mode));
	fprintf(f, "workers %u\n", d->nworkers);
	fprintf(f, "zero_copy %s\n", ufs_zero_copy_state_name(d->zero_copy_state));
	fprintf(f, "queues %u\n", d->nr_queues);
	fprintf(f, "zero_copy_queues %u\n", d->zc_queues);
	fprintf(f, "cfr_mode %s\n", ufs_cfr_mode_name(d->fs.copies.mode));
	fprintf(f, "io_path %s\n", ufs_io_path_name(d->cfg.io_path));
	fprintf(f, "passthrough %s\n", d->fs.zero_copy && d->fs.pt.state == UFS_PT_ON ?
		"unused" : ufs_passthrough_state_name(d->fs.pt.state));
	fprintf(f, "protocol 7.%u\n", d->conn.minor);
	put_start(f, d);
	put_counters(f, "", sum);
	put_u64(f, "bad_requests", sum->bad_requests);
	put_u64(f, "interrupts", sum->interrupts);
	put_u64(f, "fallbacks", sum->fallbacks);
	put_u64(f, "zc_reads", sum->zc_reads);
	put_u64(f, "zc_read_bytes", sum->zc_read_bytes);
	put_u64(f, "zc_writes", sum->zc_writes);
	put_u64(f, "zc_write_bytes", sum->zc_write_bytes);
	put_u64(f, "bounce_reads", sum->bounce_reads);
	put_u64(f, "bounce_writes", sum->bounce_writes);
	put_u64(f, "copied_reads", sum->copied_reads);
	put_u64(f, "copied_writes", sum->copied_writes);
	put_u64(f, "cfr_ring", sum->cfr_ring);
	put_u64(f, "cfr_thread", sum->cfr_thread);
	put_u64(f, "cfr_sync", sum->cfr_sync);
	put_u64(f, "cfr_cancelled", sum->cfr_cancelled);
	put_u64(f, "cfr_bytes", sum->cfr_bytes);
	put_u64(f, "cfr_fallback", sum->cfr_fallback);
	put_u64(f, "opens_passthrough", sum->opens_passthrough);
	put_u64(f, "opens_zero_copy", sum->opens_zero_copy);
	put_u64(f, "opens_copy", sum->opens_copy);
	put_u64(f, "backing_ids", __atomic_load_n(&d->fs.pt.backing_ids, __ATOMIC_RELAXED));
	put_u64(f, "fds_share", d->fs.budget.share);
	put_u64(f, "fds_charged", __atomic_load_n(&d->fs.budget.pooled, __ATOMIC_RELAXED));
	put_u64(f, "fds_refused", __atomic_load_n(&d->fs.budget.refused, __ATOMIC_RELAXED));
	put_control_opens(f, &d->fs);
	for (unsigned int i = 0; i < UFS_PT_REFUSED_COUNT; i++) {
		char name[48];

		snprintf(name, sizeof(name), "passthrough_refused_%s", ufs_pt_refusal_name(i));
		put_u64(f, name, sum->pt_refused[i]);
	}
	fprintf(f, "handover %s\n", ufs_record_kept(&d->record) ? "on" : "off");
	fprintf(f, "handover_reason %s\n", handover_why(d));
	fprintf(f, "inode_handles_reason %s\n",
		d->fs.inodes.handles.off_reason ? d->fs.inodes.handles.off_reason : "none");
	put_u64(f, "restarts", ufs_record_kept(&d->record) ?
		__atomic_load_n(&d->record.hdr->restarts, __ATOMIC_RELAXED) : 0);
	put_u64(f, "requests_replayed", sum->requests_replayed);
	put_cache(f, &d->fs.coherence);
	put_u64(f, "inodes", ufs_inode_count(&d->fs.inodes));
	put_u64(f, "inode_limit", d->cfg.inode_limit);
	fprintf(f, "inode_prune %s\n",
		ufs_prune_mode_name(__atomic_load_n(&d->fs.prune.mode, __ATOMIC_RELAXED)));
	put_u64(f, "inode_prune_short_timeouts", ufs_inode_prune_short(&d->fs.prune));
	put_u64(f, "inode_prune_notifications",
		__atomic_load_n(&d->fs.prune.notifications, __ATOMIC_RELAXED));
	put_u64(f, "inode_prune_nodeids", __atomic_load_n(&d->fs.prune.nodeids, __ATOMIC_RELAXED));
	put_u64(f, "inode_prune_forgets", ufs_inode_prune_forgets(&d->fs.inodes));
	ufs_inode_export_stats(&d->fs.inodes, &exports);
	put_u64(f, "export_nodeids", exports.count);
	put_u64(f, "export_revived", exports.revived);
	put_u64(f, "export_stale", exports.stale);
	put_u64(f, "export_expired", exports.expired);
	for (unsigned int op = 1; op < UFS_OPCODE_MAX; op++)
		put_op(f, op, sum->requests[op]);
	ufs_stats_latency(f, sum);
	free(sum);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		char prefix[32];

		snprintf(prefix, sizeof(prefix), "worker%u_", i);
		put_counters(f, prefix, &d->workers[i].stats);
	}
	put_u64(f, "slow_request_ms", d->cfg.slow_request_ms);
	put_u64(f, "slow_requests", __atomic_load_n(&d->slow.warned, __ATOMIC_RELAXED));
	put_u64(f, "inflight_untracked", inflight_untracked(d));
	ufs_slow_inflight_text(d, f, all, uid);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	*len = size;
	return buf;
}

void ufs_stats_log(struct ufs_daemon *d)
{
	size_t len;
	char *text = ufs_stats_text(d, true, 0, &len);
	char *line, *save;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		ufs_info("stats: %s", line);
	free(text);
}
