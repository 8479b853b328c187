// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: the io_uring entry's state machine (ring_ent.c): every life
 * an entry can lead is allowed step by step (a take-over's deferred and a
 * successor's adopted entries too), and the steps that would commit twice,
 * serve an entry the kernel holds, or revive a dead one are not.
 */
#include "ring_ent.h"
#include "tap.h"

#define LIFE(...) ((const enum ring_ent_state[]){ __VA_ARGS__, RING_ENT_NR_STATES })

static void check_life(const char *name, const enum ring_ent_state *life)
{
	bool allowed = true;
	const char *from = "", *to = "";

	for (; life[1] != RING_ENT_NR_STATES; life++) {
		if (!ring_ent_may(life[0], life[1])) {
			allowed = false;
			from = ring_ent_state_name(life[0]);
			to = ring_ent_state_name(life[1]);
			break;
		}
	}
	ok(allowed, "allowed: %s", name);
	if (!allowed)
		printf("#   %s -> %s refused\n", from, to);
}

static void check_refused(enum ring_ent_state from, enum ring_ent_state to, const char *why)
{
	ok(!ring_ent_may(from, to), "refused: %s -> %s (%s)", ring_ent_state_name(from),
	   ring_ent_state_name(to), why);
}

int main(void)
{
	check_life("register, serve, commit, serve again",
		   LIFE(RING_ENT_NEW, RING_ENT_KERNEL, RING_ENT_SERVING, RING_ENT_KERNEL,
			RING_ENT_SERVING, RING_ENT_KERNEL));
	check_life("a lock wait holds it until its reply",
		   LIFE(RING_ENT_KERNEL, RING_ENT_SERVING, RING_ENT_HELD, RING_ENT_KERNEL));
	check_life("zero-copied READ straight into the slot",
		   LIFE(RING_ENT_KERNEL, RING_ENT_SERVING, RING_ENT_IN_SLOT, RING_ENT_KERNEL));
	check_life("bounced READ: the bounce region into the slot, then the commit",
		   LIFE(RING_ENT_KERNEL, RING_ENT_SERVING, RING_ENT_SLOT_FILL, RING_ENT_KERNEL));
	check_life("bounced WRITE: slot to bounce region, then written out",
		   LIFE(RING_ENT_KERNEL, RING_ENT_SERVING, RING_ENT_BOUNCE_IN, RING_ENT_SERVING,
			RING_ENT_KERNEL));
	check_life("the kernel ends the entry", LIFE(RING_ENT_NEW, RING_ENT_KERNEL, RING_ENT_DEAD));
	check_life("a request during a take-over's pause, served on resume",
		   LIFE(RING_ENT_KERNEL, RING_ENT_DEFERRED, RING_ENT_SERVING, RING_ENT_KERNEL));
	check_life("a predecessor's request, served again",
		   LIFE(RING_ENT_ADOPTED, RING_ENT_SERVING, RING_ENT_KERNEL));
	check_life("a predecessor's answered request, committed as it is, then serving",
		   LIFE(RING_ENT_ADOPTED, RING_ENT_KERNEL, RING_ENT_SERVING));

	check_refused(RING_ENT_KERNEL, RING_ENT_KERNEL, "a second commit");
	check_refused(RING_ENT_NEW, RING_ENT_SERVING, "a request in an entry never registered");
	check_refused(RING_ENT_SERVING, RING_ENT_DEAD, "the kernel ends only what it holds");
	check_refused(RING_ENT_HELD, RING_ENT_HELD, "held twice: its queue would count it twice");
	check_refused(RING_ENT_HELD, RING_ENT_IN_SLOT, "I/O under a long wait");
	check_refused(RING_ENT_IN_SLOT, RING_ENT_SLOT_FILL, "a second copy into the slot");
	check_refused(RING_ENT_BOUNCE_IN, RING_ENT_KERNEL,
		      "a commit while the slot is still being read");
	check_refused(RING_ENT_SLOT_FILL, RING_ENT_SERVING, "the fill's completion only commits");
	for (int s = 0; s < RING_ENT_NR_STATES; s++)
		check_refused(RING_ENT_DEAD, s, "a dead entry stays dead");
	for (int s = 0; s < RING_ENT_NR_STATES; s++)
		check_refused(s, RING_ENT_ADOPTED, "only a successor's adoption makes one");
	check_refused(RING_ENT_SERVING, RING_ENT_DEFERRED, "only a request not yet served waits");
	check_refused(RING_ENT_DEFERRED, RING_ENT_KERNEL, "a deferred request is served first");
	check_refused(RING_ENT_NR_STATES, RING_ENT_KERNEL, "not a state");
	return t_done();
}
