/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The in-flight table's types (inflight.h has its calls): held in each
 * struct ufs_worker, so worker.h includes this, not inflight.h.
 */
#ifndef UFS_INFLIGHT_STATE_H
#define UFS_INFLIGHT_STATE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * What a request parked on a wait thread waits for (wait.h): a blocking lock
 * waits by design, for another process, and is listed in flight but never
 * called slow; an open behind a lease is (the caller did not ask to wait).
 */
enum ufs_inflight_wait {
	UFS_INFLIGHT_WAIT_NONE,
	UFS_INFLIGHT_WAIT_LOCK,
	UFS_INFLIGHT_WAIT_LEASE,
};

#define UFS_INFLIGHT_SLOTS 256
#define UFS_INFLIGHT_NAME 48

/* What a slot says, copied out by ufs_inflight_snapshot. */
struct ufs_inflight_entry {
	uint64_t arrived_ns;		/* CLOCK_MONOTONIC (clock.h); 0: free */
	uint64_t unique;
	uint64_t nodeid;
	uint32_t opcode;
	uint32_t pid;
	uint32_t uid;
	uint8_t waiting;		/* enum ufs_inflight_wait */
	char name[UFS_INFLIGHT_NAME];	/* its name argument, cut short; "" if none */
};

struct ufs_inflight_slot {
	uint64_t gen;			/* odd: being written by the worker */
	uint64_t warned_gen;		/* gen of the request the watch warned about */
	struct ufs_inflight_entry e;
};

struct ufs_inflight {
	struct ufs_inflight_slot slots[UFS_INFLIGHT_SLOTS];
	unsigned int hint;		/* the worker's: where to look for a free slot */
	uint64_t untracked;		/* requests that found every slot taken */
};

#endif /* UFS_INFLIGHT_STATE_H */
