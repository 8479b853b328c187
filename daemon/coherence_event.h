/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the coherence watcher makes of a change (coherence_event.c): the
 * kernel's notifications for the node ids it holds.  Called on the watcher
 * thread only (coherence.c): a notification can wait on the kernel's
 * inode locks.
 */
#ifndef UFS_COHERENCE_EVENT_H
#define UFS_COHERENCE_EVENT_H

#include <stddef.h>

struct ufs_coherence;

/* Read and act on every queued event; 0, or -errno if the watch failed. */
int ufs_coherence_drain(struct ufs_coherence *c, char *buf, size_t size);
/* Every cached name, attribute and page (why: logged, or NULL). */
void ufs_coherence_invalidate_all(struct ufs_coherence *c, const char *why);

#endif /* UFS_COHERENCE_EVENT_H */
