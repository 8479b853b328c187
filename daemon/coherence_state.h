/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The coherence watcher's state (struct ufs_coherence, in struct ufs_fs),
 * shared by coherence.c and coherence_event.c so that neither includes the
 * other's header.  Types only.
 */
#ifndef UFS_COHERENCE_STATE_H
#define UFS_COHERENCE_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_inode_store;

enum ufs_coherence_state {
	UFS_COH_OFF,		/* cache=timeout or cache=none: not asked for */
	UFS_COH_UNAVAILABLE,	/* cache=auto, and it cannot be had here (why) */
	UFS_COH_READY,		/* the watch is set, the watcher not started yet */
	UFS_COH_ON,		/* the watcher runs: long timeouts */
	UFS_COH_BROKEN,		/* the watch failed while serving: timeouts again */
};

/* The timeouts of a reply, in seconds. */
struct ufs_cache_timeouts {
	double entry, attr, negative;
};

/* The kernel's side: write a FUSE notification (daemon_start.c); 0 or -errno. */
typedef int (*ufs_coherence_notify_fn)(void *arg, int code, const void *payload, size_t len);

/*
 * In the file system (fs->coherence).  Set up before the first request
 * (ufs_coherence_open, _start) and read without a lock afterwards, but for
 * state (atomic: the watcher may break it) and the counters (atomic, the
 * watcher writes them).  lock guards held and busy.
 */
struct ufs_coherence {
	enum ufs_coherence_state state;
	int policy;			/* enum ufs_cache_policy */
	const char *why;		/* what made the state, for the log and the stats */
	char fs_name[16];		/* SOURCE's file system type, as far as known */
	dev_t dev;			/* SOURCE's st_dev: objects elsewhere are not watched */
	struct ufs_cache_timeouts on;	/* while coherent */
	struct ufs_cache_timeouts off;	/* otherwise, and for objects on another device */
	struct ufs_inode_store *inodes;
	int fan_fd, stop_fd;
	pid_t self;			/* events of this process are its own: echoes */
	bool writeback;			/* writeback_cache: the kernel owns files' sizes */
	struct {			/* SOURCE's root, which has no handle in the store */
		int type;
		unsigned int len;
		unsigned char bytes[128];
	} root;
	ufs_coherence_notify_fn notify;
	void *notify_arg;
	bool inherited;			/* a successor: changes before it went unseen */
	pthread_t thread;
	bool started;

	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int held;		/* holds: the watcher waits while any */
	bool busy, stop;

	/* written by the watcher, read by the stats: atomics */
	uint64_t events;		/* read from fanotify */
	uint64_t invalidations;		/* notifications the kernel took */
	uint64_t echoes;		/* the daemon's own changes, dropped */
	uint64_t ignored;		/* about nothing the kernel holds */
	uint64_t coalesced;		/* an invalidation already covered it */
	uint64_t overflows;		/* lost events: everything invalidated */
	uint64_t overflow_logged_ms;	/* CLOCK_MONOTONIC of the episode's log line */
};

#endif /* UFS_COHERENCE_STATE_H */
