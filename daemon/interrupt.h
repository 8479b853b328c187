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

#include <stdbool.h>
#include <stdint.h>

/* Remember an INTERRUPT that found nothing to interrupt yet. */
void ufs_interrupt_remember(uint64_t unique);

/* Was request unique interrupted before it started waiting?  Consumes the record. */
bool ufs_interrupt_claim(uint64_t unique);

#endif /* UFS_INTERRUPT_H */
