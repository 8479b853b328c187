// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A small ring of early INTERRUPTs.  Old records are overwritten: an
 * INTERRUPT whose request never waits (it completed) is simply forgotten.
 */
#include <pthread.h>

#include "interrupt.h"

/*
 * Every INTERRUPT passes through here (ufs_op_interrupt), and a record is
 * needed only until its request registers, a few microseconds later; the
 * oldest are overwritten.
 */
#define EARLY_INTERRUPTS 256

static pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t early[EARLY_INTERRUPTS];	/* 0: free (request ids start at 2) */
static unsigned int early_next;

void ufs_interrupt_remember(uint64_t unique)
{
	pthread_mutex_lock(&early_lock);
	early[early_next] = unique;
	early_next = (early_next + 1) % EARLY_INTERRUPTS;
	pthread_mutex_unlock(&early_lock);
}

bool ufs_interrupt_claim(uint64_t unique)
{
	bool found = false;

	pthread_mutex_lock(&early_lock);
	for (unsigned int i = 0; i < EARLY_INTERRUPTS; i++) {
		if (early[i] == unique) {
			early[i] = 0;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&early_lock);
	return found;
}
