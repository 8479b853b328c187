/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Replies on the ring (ring_reply.c): COMMIT_AND_FETCH, replies handed over
 * by other threads, the zero-copy slot fill; the transport's ops table.
 */
#ifndef UFS_RING_REPLY_H
#define UFS_RING_REPLY_H

#include "ring_types.h"

extern const struct ufs_transport_ops ufs_ring_ops;

void ring_commit(struct ring_worker *rw, struct ring_ent *ent, int error, size_t len);
void ring_commit_as_is(struct ring_worker *rw, struct ring_ent *ent);
bool ring_zc_reply(struct ring_worker *rw, struct ring_ent *ent, int error, size_t len);
void ring_zc_slot_done(struct ring_worker *rw, struct ring_ent *ent, int res);

#endif /* UFS_RING_REPLY_H */
