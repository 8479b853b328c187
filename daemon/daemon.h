/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon: one mounted file system, its connection, and its workers.
 */
#ifndef UFS_DAEMON_H
#define UFS_DAEMON_H

#include <signal.h>
#include <stdbool.h>
#include <time.h>

#include "config.h"
#include "fs.h"
#include "handover.h"
#include "mount.h"
#include "notify.h"
#include "record.h"
#include "session.h"
#include "store.h"
#include "worker.h"

enum ufs_transport {
	UFS_TRANSPORT_DEV,
	UFS_TRANSPORT_URING,
};

struct ufs_uring;

/*
 * Whether the workers serve.  A take-over pauses them between requests;
 * it ends in HANDED_OVER (they stop quietly: the successor serves) or back
 * in SERVING.  Transitions: ufs_serve_state_set() (worker.c).
 */
enum ufs_serve_state {
	UFS_SERVING,
	UFS_SERVE_PAUSED,
	UFS_SERVE_HANDED_OVER,
};

struct ufs_pause {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* state changed, or a worker parked */
	enum ufs_serve_state state;	/* written under lock; read atomically */
	unsigned int parked;		/* workers stopped between requests */
	unsigned int gone;		/* workers that left after the hand-over */
};

struct ufs_daemon {
	struct ufs_config cfg;
	struct ufs_mount_opts mount_opts;
	const char *source;
	const char *mountpoint;
	bool foreground;
	struct ufs_notify notify;

	struct ufs_mount mnt;
	int fuse_fd;			/* the connection (libfuse's descriptor, or inherited) */
	struct ufs_record record;	/* the hand-over record (handover=on) */
	struct ufs_store store;		/* the export store (export_store=DIR) */
	struct ufs_inherit inherit;	/* what a predecessor left, until restored */
	bool stored_fuse;		/* the connection is in systemd's store */
	ino_t takeover_ino;		/* our take-over socket's file (handover.c) */
	unsigned int stored_dev, stored_ring;	/* dev-N, ring-N in systemd's store */
	struct ufs_pause pause;
	struct ufs_conn conn;
	struct ufs_fs fs;
	enum ufs_transport transport;
	struct ufs_uring *uring;	/* io_uring transport state, or NULL */
	const char *queue_mode;		/* "per-entry", "bufpool", or "-" on /dev/fuse */
	const char *zero_copy_state;	/* "on", "eperm", "einval", "off" */
	unsigned int zc_queues;		/* queues the kernel granted zero copy */
	unsigned int nr_queues;		/* io_uring queues, 0 on /dev/fuse */
	const char *cfr_mode;		/* how copy_file_range runs: fs.copies.mode */

	cpu_set_t cpus;			/* CPUs of its threads: cpus=, else its start affinity */
	unsigned int nworkers;		/* workers serving requests */
	unsigned int workers_alloc;	/* entries in workers[] */
	struct ufs_worker *workers;
	struct ufs_worker dev_reader;	/* io_uring: the /dev/fuse reader */

	bool stopping;			/* workers: leave on the next wake-up */
	int event_fd;			/* workers tell the main loop the connection ended */
	int fatal;			/* a worker cannot go on: end the connection */
	int workers_running;		/* protected by atomics */
	int worker_error;
	struct timespec started;
};

/* worker.c: what workers tell the main loop (through event_fd) */

/* A worker stopped: the connection ended (error 0) or it failed (-errno). */
void ufs_daemon_worker_exited(struct ufs_daemon *d, int error);

/*
 * A worker found the connection unservable (its queue lost entries): the
 * main loop ends the connection and the daemon exits non-zero.
 */
void ufs_daemon_fatal(struct ufs_daemon *d, int error);

/* daemon.c: open SOURCE (ufs_fs_init) with the file system's upcalls wired to d. */
int ufs_daemon_fs_open(struct ufs_daemon *d);
int ufs_daemon_store_open(struct ufs_daemon *d);
void ufs_daemon_store_load(struct ufs_daemon *d, bool inherited);

/* init.c: read INIT, negotiate, reply; 0 or a negative errno, logged. */
int ufs_init_exchange(struct ufs_daemon *d);

/* worker.c: the workers' slots and CPUs, before any starts. */
int ufs_workers_alloc(struct ufs_daemon *d);

/* loop.c: the main thread until every worker has seen the connection end. */
void ufs_main_loop(struct ufs_daemon *d, const sigset_t *sigs, int listen_fd);
/*
 * After the loop: the connection ended with nobody unmounting (the kernel
 * aborted it): logged, the dead mount detached.  Returns the daemon's error.
 */
int ufs_main_loop_end(struct ufs_daemon *d);

/* worker.c: pausing for a take-over */

/* Between two requests: true when the mount was handed over (stop quietly). */
bool ufs_worker_pause_point(struct ufs_worker *w);
/* A worker that cannot wait in ufs_worker_pause_point (a ring's keeps reaping). */
void ufs_worker_set_parked(struct ufs_worker *w, bool parked);
void ufs_worker_gone(struct ufs_worker *w);
static inline bool ufs_worker_pausing(const struct ufs_daemon *d)
{
	return __atomic_load_n(&d->pause.state, __ATOMIC_ACQUIRE) != UFS_SERVING;
}
void ufs_pause_init(struct ufs_pause *p);
/* Checked transitions; returns false (and changes nothing) for a forbidden one. */
bool ufs_serve_state_set(struct ufs_pause *p, enum ufs_serve_state to);
/*
 * Wait until want workers are parked (gone: have left), or timeout_ms;
 * nudge() wakes them meanwhile.
 */
int ufs_pause_wait(struct ufs_pause *p, bool gone, unsigned int want, int timeout_ms,
		   void (*nudge)(void *), void *arg);

/* restore.c: a successor's start from what it inherited; why set on failure. */
int ufs_restore(struct ufs_daemon *d, char *why, size_t why_len);

/* stats.c: the `name value` lines of the control file and SIGUSR1; caller frees. */
char *ufs_stats_text(struct ufs_daemon *d, size_t *len);
/* Sum of all workers' counters. */
void ufs_stats_total(struct ufs_daemon *d, struct ufs_stats *total);
/* SIGUSR1: the stats lines to the log. */
void ufs_stats_log(struct ufs_daemon *d);

#endif /* UFS_DAEMON_H */
