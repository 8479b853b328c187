/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A ring worker's exit guard (ring_guard.c): a private FUTEX_WAIT in
 * flight on the ring, so that the thread's exit cancels its idle entries.
 */
#ifndef UFS_RING_GUARD_H
#define UFS_RING_GUARD_H

#include "ring_types.h"

void ring_exit_guard_arm(struct ring_worker *rw);
void ring_exit_guard_done(struct ring_worker *rw, int res);

#endif /* UFS_RING_GUARD_H */
