// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A small ring of early INTERRUPTs.  Old records are overwritten: an
 * INTERRUPT whose request never waits (it completed) is simply forgotten.
 */
#include <string.h>

#include "interrupt.h"

void ufs_interrupts_init(struct ufs_interrupts *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

void ufs_interrupts_destroy(struct ufs_interrupts *t)
{
	pthread_mutex_destroy(&t->lock);
}

void ufs_interrupt_remember(struct ufs_interrupts *t, uint64_t unique)
{
	pthread_mutex_lock(&t->lock);
	t->early[t->next] = unique;
	t->next = (t->next + 1) % UFS_EARLY_INTERRUPTS;
	pthread_mutex_unlock(&t->lock);
}

bool ufs_interrupt_claim(struct ufs_interrupts *t, uint64_t unique)
{
	bool found = false;

	pthread_mutex_lock(&t->lock);
	for (unsigned int i = 0; i < UFS_EARLY_INTERRUPTS; i++) {
		if (t->early[i] == unique) {
			t->early[i] = 0;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}
