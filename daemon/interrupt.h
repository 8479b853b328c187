/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * INTERRUPTs that arrive before the request they name is waiting.
 *
 * INTERRUPT comes over /dev/fuse while its request may still be on its way
 * through a ring worker to the lock wait or copy it becomes.  The kernel's
 * "reply EAGAIN to requeue the interrupt" trick does not reach ring
 * requests, so an early INTERRUPT is remembered here and claimed by the
 * wait or copy when it starts.  Request ids are never reused.
 */
#ifndef UFS_INTERRUPT_H
#define UFS_INTERRUPT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Every INTERRUPT passes through here (ufs_op_interrupt), and a record is
 * needed only until its request registers, a few microseconds later; the
 * oldest are overwritten.
 */
#define UFS_EARLY_INTERRUPTS 256

struct ufs_interrupts {
	pthread_mutex_t lock;			/* protects everything below */
	uint64_t early[UFS_EARLY_INTERRUPTS];	/* 0: free (request ids start at 2) */
	unsigned int next;			/* the record overwritten next */
};

void ufs_interrupts_init(struct ufs_interrupts *t);
void ufs_interrupts_destroy(struct ufs_interrupts *t);

/* Remember an INTERRUPT that found nothing to interrupt yet. */
void ufs_interrupt_remember(struct ufs_interrupts *t, uint64_t unique);

/* Was request unique interrupted before it started waiting?  Consumes the record. */
bool ufs_interrupt_claim(struct ufs_interrupts *t, uint64_t unique);

#endif /* UFS_INTERRUPT_H */
