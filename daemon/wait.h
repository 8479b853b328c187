/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Long waits off the worker: a blocking call on a helper thread of its own,
 * woken by INTERRUPT (wait.c).
 */
#ifndef UFS_WAIT_H
#define UFS_WAIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct ufs_interrupts;
struct ufs_req;
struct ufs_wait;

/* The file system's long waits. */
struct ufs_waits {
	struct ufs_interrupts *early;	/* INTERRUPTs that came before their wait */
	pthread_mutex_t lock;		/* protects list and stopping */
	struct ufs_wait *list;		/* every wait in progress, for INTERRUPT */
	bool stopping;			/* the connection ended: no new waits */
	int active;			/* helper threads that have not replied yet; atomic */
	/*
	 * Waits at once beyond which the next is refused with ENOLCK, or 0:
	 * over io_uring the holds of each queue bound them (ring_reply.c);
	 * over /dev/fuse, where a wait costs a thread and nothing else, this.
	 * Set before the workers start.
	 */
	int max;
};

void ufs_waits_init(struct ufs_waits *ws, struct ufs_interrupts *early);
void ufs_waits_destroy(struct ufs_waits *ws);

struct ufs_wait_ops {
	const char *name;		/* for the log: "a lock wait" */
	/* The blocking call: a result, or -EINTR when woken (then run again unless interrupted). */
	ssize_t (*run)(struct ufs_req *req, void *arg);
	/* After the call, on the helper thread: the reply length or an errno.  Owns arg. */
	ssize_t (*done)(struct ufs_req *req, void *arg, ssize_t ret);
	/* What a wait that must end before request_timeout answers. */
	int timeout_error;
	/* enum ufs_inflight_wait: what the in-flight list says it waits for */
	uint8_t waits_for;
};

/*
 * Run ops->run(req, arg) on a helper thread and reply with what ops->done
 * returns.  Returns 0 (the request is then answered from there: the handler
 * returns -UFS_EQUEUED) or an errno to answer it with, arg still the caller's.
 */
int ufs_wait_start(struct ufs_waits *ws, struct ufs_req *req, const struct ufs_wait_ops *ops,
		   void *arg);

/* INTERRUPT: wake the wait of request unique, if there is one. */
bool ufs_wait_interrupt(struct ufs_waits *ws, uint64_t unique);
/* Workers block the wake-up signal; only helper threads take it. */
int ufs_wait_block_wake_signal(void);
/* The connection ended: wake every wait (each replies EINTR), refuse new ones. */
void ufs_wait_interrupt_all(struct ufs_waits *ws);
/* Until every helper thread has replied, so none outlives its transport. */
void ufs_wait_idle(struct ufs_waits *ws);

#endif /* UFS_WAIT_H */
