// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A ring entry's life, as one state machine.  Every change of ent->state
 * goes through ring_ent_set(), which checks it against the table below: one
 * the table does not allow is logged, and a debug build stops there.
 *
 * The state is the worker thread's alone: other threads hand replies and
 * cancels over through the worker's remote list, and the worker changes the
 * state when it takes them (ring_types.h).
 */
#include "log.h"
#include "ring_ent.h"

#define TO(s) (1u << (s))

/* For each state, the states it may go to. */
static const unsigned int ring_ent_next[RING_ENT_NR_STATES] = {
	/* registered: the kernel holds it */
	[RING_ENT_NEW] = TO(RING_ENT_KERNEL),
	/* a request arrived, or the kernel ended the entry */
	[RING_ENT_KERNEL] = TO(RING_ENT_SERVING) | TO(RING_ENT_DEFERRED) | TO(RING_ENT_DEAD),
	[RING_ENT_SERVING] = TO(RING_ENT_KERNEL) | TO(RING_ENT_HELD) | TO(RING_ENT_IN_SLOT) |
			     TO(RING_ENT_BOUNCE_IN) | TO(RING_ENT_SLOT_FILL),
	/* a long wait's reply commits it */
	[RING_ENT_HELD] = TO(RING_ENT_KERNEL),
	/* the READ_FIXED into the slot ended: the reply commits it */
	[RING_ENT_IN_SLOT] = TO(RING_ENT_KERNEL),
	/* the slot's bytes are in the bounce region: written out as any WRITE */
	[RING_ENT_BOUNCE_IN] = TO(RING_ENT_SERVING),
	/* the bounce region's bytes reached the slot, or could not */
	[RING_ENT_SLOT_FILL] = TO(RING_ENT_KERNEL),
	/* the take-over failed: served after all (or the successor's now) */
	[RING_ENT_DEFERRED] = TO(RING_ENT_SERVING),
	/* a predecessor's request: served, or its reply committed as it is */
	[RING_ENT_ADOPTED] = TO(RING_ENT_SERVING) | TO(RING_ENT_KERNEL),
	[RING_ENT_DEAD] = 0,
};

bool ring_ent_may(enum ring_ent_state from, enum ring_ent_state to)
{
	if ((unsigned int)from >= RING_ENT_NR_STATES || (unsigned int)to >= RING_ENT_NR_STATES)
		return false;
	return ring_ent_next[from] & TO(to);
}

void ring_ent_set(struct ring_ent *ent, enum ring_ent_state to)
{
	if (!ring_ent_may(ent->state, to)) {
		ufs_log_once(UFS_LOG_ERR, "io_uring: qid=%u entry %u: %s -> %s is not a transition",
			     ent->q->qid, ent->idx, ring_ent_state_name(ent->state),
			     ring_ent_state_name(to));
		UFS_BUG_ON(true);
	}
	ent->state = to;
}

const char *ring_ent_state_name(enum ring_ent_state s)
{
	static const char *const names[RING_ENT_NR_STATES] = {
		[RING_ENT_NEW] = "new",		  [RING_ENT_KERNEL] = "kernel",
		[RING_ENT_SERVING] = "serving",	  [RING_ENT_HELD] = "held",
		[RING_ENT_IN_SLOT] = "in-slot",	  [RING_ENT_BOUNCE_IN] = "bounce-in",
		[RING_ENT_SLOT_FILL] = "slot-fill", [RING_ENT_DEFERRED] = "deferred",
		[RING_ENT_ADOPTED] = "adopted",	  [RING_ENT_DEAD] = "dead",
	};

	return (unsigned int)s < RING_ENT_NR_STATES ? names[s] : "?";
}
