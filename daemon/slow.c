// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Slow requests named (slow_request_ms).  Every worker keeps a table of its
 * requests in flight with their arrival times (inflight.h), written
 * without a lock on the request path; this thread reads the tables a few
 * times per threshold and logs, once per request, those in flight longer
 * than it: opcode, node id, the path the daemon knows (inode_path.c, plus
 * the request's name argument), the caller's pid and uid, and for how long.
 * A request waiting by design (a blocking POSIX or flock lock, parked on a
 * wait thread) is listed in flight but not logged: it waits for another
 * process, not for the daemon nor its backing file system.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "daemon.h"
#include "decode.h"
#include "inflight.h"
#include "inode_path.h"
#include "log.h"
#include "slow.h"

/* Checked this often, within bounds: a request is named at most a period late. */
#define PERIOD_MIN_MS 50u
#define PERIOD_MAX_MS 1000u

struct snap {
	struct ufs_inflight_entry *e;
	uint64_t *ids;
	struct ufs_inflight **table; /* the table each entry came from */
	unsigned int n, cap;
};

static void snap_worker(struct snap *s, struct ufs_worker *w)
{
	unsigned int got;

	if (s->n + UFS_INFLIGHT_SLOTS > s->cap)
		return;
	got = ufs_inflight_snapshot(&w->inflight, s->e + s->n, s->ids + s->n, UFS_INFLIGHT_SLOTS);
	for (unsigned int i = 0; i < got; i++)
		s->table[s->n + i] = &w->inflight;
	s->n += got;
}

/* Every worker's requests in flight (and the io_uring transport's /dev/fuse reader's). */
static int snap_take(struct ufs_daemon *d, struct snap *s)
{
	unsigned int nw = d->nworkers + 1;

	memset(s, 0, sizeof(*s));
	s->cap = nw * UFS_INFLIGHT_SLOTS;
	s->e = calloc(s->cap, sizeof(*s->e));
	s->ids = calloc(s->cap, sizeof(*s->ids));
	s->table = calloc(s->cap, sizeof(*s->table));
	if (!s->e || !s->ids || !s->table) {
		free(s->e);
		free(s->ids);
		free(s->table);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < d->nworkers; i++)
		snap_worker(s, &d->workers[i]);
	if (d->transport == UFS_TRANSPORT_URING)
		snap_worker(s, &d->dev_reader);
	return 0;
}

static void snap_free(struct snap *s)
{
	free(s->e);
	free(s->ids);
	free(s->table);
}

static uint64_t age_ms(const struct ufs_inflight_entry *e, uint64_t now)
{
	return now > e->arrived_ns ? (now - e->arrived_ns) / 1000000u : 0;
}

/* What a parked request waits for: the message's words and the in-flight list's tag. */
static const struct {
	const char *text, *tag;
} waits[] = {
	[UFS_INFLIGHT_WAIT_NONE] = { "", "" },
	[UFS_INFLIGHT_WAIT_LOCK] = { ", waiting for a lock", " waiting=lock" },
	[UFS_INFLIGHT_WAIT_LEASE] = { ", waiting for a lease to be given up", " waiting=lease" },
};

static unsigned int wait_index(uint8_t what)
{
	return what < sizeof(waits) / sizeof(waits[0]) ? what : UFS_INFLIGHT_WAIT_NONE;
}

/*
 * A name is anyone's to choose: a newline in it would start a log line of
 * the chooser's (a priority of its own in the journal).  Control bytes and
 * the backslash are written as \ooo, as mountinfo does.
 */
static void escape_name(const char *in, char *out, size_t size)
{
	size_t n = 0;

	for (; *in && n + 5 < size; in++) {
		unsigned char c = (unsigned char)*in;

		if (c < 0x20 || c == 0x7f || c == '\\')
			n += (size_t)snprintf(out + n, size - n, "\\%03o", c);
		else
			out[n++] = (char)c;
	}
	out[n] = '\0';
}

static void warn_slow(struct ufs_daemon *d, const struct ufs_inflight_entry *e, uint64_t now)
{
	char raw[4096], path[4 * sizeof(raw)], name[4 * sizeof(e->name)];

	if (ufs_inode_path(&d->fs.inodes, e->nodeid, raw, sizeof(raw)))
		snprintf(raw, sizeof(raw), "?");
	escape_name(raw, path, sizeof(path));
	escape_name(e->name, name, sizeof(name));
	__atomic_fetch_add(&d->slow.warned, 1, __ATOMIC_RELAXED);
	ufs_warn("slow request: %s unique=%llu nodeid=%llu path=%s%s%s pid=%u uid=%u "
		 "in flight for %llu ms%s (slow_request_ms=%u)",
		 ufs_opcode_name(e->opcode), (unsigned long long)e->unique,
		 (unsigned long long)e->nodeid, path, name[0] ? "/" : "", name, e->pid, e->uid,
		 (unsigned long long)age_ms(e, now), waits[wait_index(e->waiting)].text,
		 d->cfg.slow_request_ms);
}

static void check_once(struct ufs_daemon *d)
{
	uint64_t limit = (uint64_t)d->cfg.slow_request_ms * 1000000u;
	uint64_t now = ufs_now_ns();
	struct snap s;

	if (snap_take(d, &s))
		return;
	for (unsigned int i = 0; i < s.n; i++) {
		if (s.e[i].waiting == UFS_INFLIGHT_WAIT_LOCK || now < s.e[i].arrived_ns + limit)
			continue;
		if (ufs_inflight_warn_once(s.table[i], s.ids[i]))
			warn_slow(d, &s.e[i], now);
	}
	snap_free(&s);
}

static void *watch_main(void *arg)
{
	struct ufs_daemon *d = arg;
	unsigned int period = d->cfg.slow_request_ms / 4;
	struct timespec at;

	if (period < PERIOD_MIN_MS)
		period = PERIOD_MIN_MS;
	if (period > PERIOD_MAX_MS)
		period = PERIOD_MAX_MS;
	pthread_setname_np(pthread_self(), "uringfs-slow");
	pthread_mutex_lock(&d->slow.lock);
	while (!d->slow.stop) {
		clock_gettime(CLOCK_MONOTONIC, &at);
		at.tv_nsec += (long)(period % 1000) * 1000000;
		at.tv_sec += period / 1000 + at.tv_nsec / 1000000000;
		at.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&d->slow.cond, &d->slow.lock, &at);
		if (d->slow.stop)
			break;
		pthread_mutex_unlock(&d->slow.lock);
		check_once(d);
		pthread_mutex_lock(&d->slow.lock);
	}
	pthread_mutex_unlock(&d->slow.lock);
	return NULL;
}

void ufs_slow_watch_start(struct ufs_daemon *d)
{
	struct ufs_slow_watch *w = &d->slow;
	pthread_condattr_t attr;
	int ret;

	if (!d->cfg.slow_request_ms || w->started)
		return;
	w->stop = false;
	if (pthread_condattr_init(&attr))
		goto fail;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	if (ret || pthread_mutex_init(&w->lock, NULL))
		goto fail;
	if (pthread_create(&w->thread, NULL, watch_main, d))
		goto fail;
	w->started = true;
	return;
fail:
	ufs_warn("slow_request_ms: no watch thread: slow requests are not logged "
		 "(the control file still lists those in flight)");
}

void ufs_slow_watch_stop(struct ufs_daemon *d)
{
	struct ufs_slow_watch *w = &d->slow;

	if (!w->started)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	w->started = false;
}

static int oldest_first(const void *a, const void *b)
{
	const struct ufs_inflight_entry *x = a, *y = b;

	return x->arrived_ns < y->arrived_ns ? -1 : x->arrived_ns > y->arrived_ns;
}

/*
 * An ordinary reader's own requests.  An unknown id (FUSE_INVALID_UIDGID:
 * with idmap, a request that creates nothing, or a caller that could not
 * be read) is nobody's: it matches no reader, an unknown reader included.
 */
static bool shown_to(const struct ufs_inflight_entry *e, uid_t uid)
{
	return uid != FUSE_INVALID_UIDGID && e->uid == uid;
}

void ufs_slow_inflight_text(struct ufs_daemon *d, FILE *f, bool all, uid_t uid)
{
	uint64_t now = ufs_now_ns();
	unsigned int kept = 0, oldest, withheld = 0;
	struct snap s;

	if (snap_take(d, &s)) {
		s.n = 0;
		s.e = NULL;
	}
	if (s.n)
		qsort(s.e, s.n, sizeof(*s.e), oldest_first);
	/* The control file's opens: this one, taking the snapshot, and its like. */
	for (unsigned int i = 0; i < s.n; i++) {
		const struct ufs_inflight_entry *e = &s.e[i];

		if (e->opcode != FUSE_OPEN || !d->fs.control || e->nodeid != d->fs.control->nodeid)
			s.e[kept++] = *e;
	}
	/* The oldest that is not a lock wait: those wait by design, and an alert would fire. */
	for (oldest = 0; oldest < kept && s.e[oldest].waiting == UFS_INFLIGHT_WAIT_LOCK; oldest++)
		;
	fprintf(f, "inflight_requests %u\n", kept);
	fprintf(f, "inflight_oldest_ms %llu\n",
		oldest < kept ? (unsigned long long)age_ms(&s.e[oldest], now) : 0ull);
	/* Another user's request names its process and file: only the privileged see it. */
	for (unsigned int i = 0; i < kept && !all; i++)
		withheld += !shown_to(&s.e[i], uid);
	if (!all)
		fprintf(f, "inflight_withheld %u\n", withheld);
	for (unsigned int i = 0; i < kept; i++) {
		const struct ufs_inflight_entry *e = &s.e[i];

		if (!all && !shown_to(e, uid))
			continue;
		fprintf(f, "inflight %s unique=%llu nodeid=%llu pid=%u uid=%u age_ms=%llu%s\n",
			ufs_opcode_name(e->opcode), (unsigned long long)e->unique,
			(unsigned long long)e->nodeid, e->pid, e->uid,
			(unsigned long long)age_ms(e, now), waits[wait_index(e->waiting)].tag);
	}
	snap_free(&s);
}
