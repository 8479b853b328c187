/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The requests a worker has in flight, with their arrival times, for the
 * slow request watch (slow.c) and the control file's in-flight list.
 *
 * Each worker owns a small table of slots in its struct ufs_worker.  Only
 * the worker's own thread claims a slot (at dispatch); whichever thread
 * ends the request frees it (ufs_req_done, before the reply), and any
 * thread may read it.  No lock: a slot's gen is odd while its owner
 * writes it, and a reader keeps what it copied only if gen was the same
 * even number before and after.  A request arriving with every slot taken
 * is served untracked (counted in untracked).
 */
#ifndef UFS_INFLIGHT_H
#define UFS_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include "inflight_state.h"

struct ufs_req;

/* The serving worker's thread, after decoding: req->inflight, or NULL if full. */
void ufs_inflight_begin(struct ufs_inflight *t, struct ufs_req *req);
/* Any thread, once, as the request ends (before its reply). */
void ufs_inflight_end(struct ufs_req *req);
/* Any thread: the request is parked in a wait (enum ufs_inflight_wait) from now on. */
void ufs_inflight_waiting(struct ufs_req *req, uint8_t what);
/*
 * Up to max of t's requests into out, with each one's slot index and gen
 * in ids[] (for ufs_inflight_warn_once); returns how many.
 */
unsigned int ufs_inflight_snapshot(struct ufs_inflight *t, struct ufs_inflight_entry *out,
				   uint64_t *ids, unsigned int max);
/* True the first time it is asked for that request (id from the snapshot). */
bool ufs_inflight_warn_once(struct ufs_inflight *t, uint64_t id);

#endif /* UFS_INFLIGHT_H */
