/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: one mounted file system, its connection, and its workers.
 *
 * Types and inline helpers only (no daemon.c): the start-up tier fills
 * struct ufs_daemon (daemon_start.c, main.c, init_exchange.c, transport.c),
 * and the transports (dev.c, uring.c, ring_*.c) and worker.c reach it
 * through this header without including any start-up header.  So it
 * includes only headers of the transports' tier and below: the hand-over's
 * state is handover.h's types, systemd's notify_state.h's.
 */
#ifndef UFS_DAEMON_H
#define UFS_DAEMON_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "fs.h"
#include "handover.h"
#include "init_negotiate.h"
#include "mount.h"
#include "notify_state.h"
#include "record.h"
#include "store.h"
#include "worker.h"

enum ufs_transport {
	UFS_TRANSPORT_DEV,
	UFS_TRANSPORT_URING,
};

/* How the kernel's io_uring queues take payloads (uring.c); NONE on /dev/fuse. */
enum ufs_queue_mode {
	UFS_QUEUE_NONE,
	UFS_QUEUE_PER_ENTRY,		/* a payload buffer per entry */
	UFS_QUEUE_BUFPOOL,		/* 7.3: a buffer pool per queue */
};

/* For the log, the control file and STATUS=: "-", "per-entry", "bufpool". */
static inline const char *ufs_queue_mode_name(enum ufs_queue_mode m)
{
	switch (m) {
	case UFS_QUEUE_PER_ENTRY:
		return "per-entry";
	case UFS_QUEUE_BUFPOOL:
		return "bufpool";
	case UFS_QUEUE_NONE:
		break;
	}
	return "-";
}

/* What zero copy came to (uring.c). */
enum ufs_zero_copy_state {
	UFS_ZC_OFF,			/* not asked for, or /dev/fuse */
	UFS_ZC_ON,			/* every queue */
	UFS_ZC_EPERM,			/* the kernel refused some queue: EPERM */
	UFS_ZC_EINVAL,			/* the kernel refused some queue otherwise */
};

/* For the log, the control file and STATUS=: "off", "on", "eperm", "einval". */
static inline const char *ufs_zero_copy_state_name(enum ufs_zero_copy_state s)
{
	switch (s) {
	case UFS_ZC_ON:
		return "on";
	case UFS_ZC_EPERM:
		return "eperm";
	case UFS_ZC_EINVAL:
		return "einval";
	case UFS_ZC_OFF:
		break;
	}
	return "off";
}

struct ufs_uring;

/* The slow request watch's thread (slow.c); d->slow, the main thread starts and stops it. */
struct ufs_slow_watch {
	pthread_t thread;
	bool started;
	bool stop;			/* under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* stop was set */
	uint64_t warned;		/* slow requests logged (atomic) */
};

struct ufs_daemon {
	struct ufs_config cfg;
	struct ufs_mount_opts mount_opts;
	const char *source;		/* argv, or d->handover.source */
	const char *mountpoint;
	bool foreground;
	struct ufs_notify notify;

	struct ufs_mount mnt;
	int fuse_fd;			/* the connection (libfuse's descriptor, or inherited) */
	struct ufs_record record;	/* the hand-over record (handover=on) */
	struct ufs_store store;		/* the export store (export_store=DIR) */
	struct ufs_handover handover;	/* the hand-over's state (handover.h, main thread) */
	struct ufs_pause pause;
	struct ufs_conn conn;
	struct ufs_fs fs;
	enum ufs_transport transport;
	struct ufs_uring *uring;	/* io_uring transport state, or NULL */
	enum ufs_queue_mode queue_mode;	/* set by the transport's start */
	enum ufs_zero_copy_state zero_copy_state;
	unsigned int zc_queues;		/* queues the kernel granted zero copy */
	unsigned int nr_queues;		/* io_uring queues, 0 on /dev/fuse */
	const char *cfr_why;		/* why copy_file_range is not on the ring, or NULL */

	cpu_set_t cpus;			/* CPUs of its threads: cpus=, else its start affinity */
	unsigned int nworkers;		/* workers serving requests */
	unsigned int workers_alloc;	/* entries in workers[] */
	struct ufs_worker *workers;
	struct ufs_worker dev_reader;	/* io_uring: the /dev/fuse reader */
	struct ufs_slow_watch slow;	/* slow_request_ms's thread (slow.c) */

	bool stopping;			/* workers: leave on the next wake-up */
	int event_fd;			/* workers tell the main loop the connection ended */
	int fatal;			/* a worker cannot go on: end the connection */
	int workers_running;		/* protected by atomics */
	int worker_error;
	struct timespec started;
};

/*
 * For the workers (dev.c, ring_serve.c), to the main loop through event_fd:
 * inline here, as they touch nothing but struct ufs_daemon's atomics.
 */

/*
 * A worker found the connection unservable (its queue lost entries): the
 * main loop ends the connection and the daemon exits non-zero.
 */
static inline void ufs_daemon_fatal(struct ufs_daemon *d, int error)
{
	uint64_t one = 1;

	__atomic_compare_exchange_n(&d->fatal, &(int){ 0 }, error ? error : -EIO, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	if (write(d->event_fd, &one, sizeof(one)) < 0) {
		/* The counter is at its limit: the main loop is awake anyway. */
	}
}

/* A worker stopped: the connection ended (error 0) or it failed (-errno). */
static inline void ufs_daemon_worker_exited(struct ufs_daemon *d, int error)
{
	uint64_t one = 1;

	if (error)
		__atomic_compare_exchange_n(&d->worker_error, &(int){ 0 }, error, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELEASE);
	if (write(d->event_fd, &one, sizeof(one)) < 0) {
		/* The counter is at its limit: the main loop is awake anyway. */
	}
}

/* Are the workers asked to pause (or handed over)?  worker.h has the rest. */
static inline bool ufs_worker_pausing(const struct ufs_daemon *d)
{
	return __atomic_load_n(&d->pause.state, __ATOMIC_ACQUIRE) != UFS_SERVING;
}

#endif /* UFS_DAEMON_H */
