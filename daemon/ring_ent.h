/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A ring entry's state machine (ring_ent.c): every change of ent->state
 * goes through ring_ent_set().
 */
#ifndef UFS_RING_ENT_H
#define UFS_RING_ENT_H

#include "ring_types.h"

bool ring_ent_may(enum ring_ent_state from, enum ring_ent_state to);
void ring_ent_set(struct ring_ent *ent, enum ring_ent_state to);
const char *ring_ent_state_name(enum ring_ent_state s);

#endif /* UFS_RING_ENT_H */
