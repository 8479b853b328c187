// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A worker's copy lane as a line (copy_lane.h): whose turn it is, in the
 * order the copies came, and the way out for one that waits.
 */
#include <stddef.h>

#include "copy_lane.h"
#include "log.h"

void ufs_copy_turn_set(struct ufs_copy_turn *t, enum ufs_copy_state to)
{
	static const unsigned int next[] = {
		[UFS_COPY_NEW] = 1u << UFS_COPY_QUEUED | 1u << UFS_COPY_ENDED,
		[UFS_COPY_QUEUED] = 1u << UFS_COPY_RUNNING | 1u << UFS_COPY_ENDED,
		[UFS_COPY_RUNNING] = 1u << UFS_COPY_ENDED,
		[UFS_COPY_ENDED] = 0,
	};

	UFS_BUG_ON(!(next[t->state] & 1u << to));
	t->state = to;
}

bool ufs_copy_line_admit(struct ufs_copy_line *l, unsigned int max)
{
	bool room = l->njobs < max;

	if (room)
		l->njobs++;
	return room;
}

void ufs_copy_line_unadmit(struct ufs_copy_line *l)
{
	l->njobs--;
}

void ufs_copy_line_queue(struct ufs_copy_line *l, struct ufs_copy_turn *t)
{
	ufs_copy_turn_set(t, UFS_COPY_QUEUED);
	if (l->tail)
		l->tail->queue_next = t;
	else
		l->head = t;
	l->tail = t;
}

struct ufs_copy_turn *ufs_copy_line_next(struct ufs_copy_line *l)
{
	struct ufs_copy_turn *t = l->running ? NULL : l->head;

	if (t) {
		l->head = t->queue_next;
		if (!l->head)
			l->tail = NULL;
		ufs_copy_turn_set(t, UFS_COPY_RUNNING);
		l->running = t;
	}
	return t;
}

bool ufs_copy_line_dequeue(struct ufs_copy_line *l, struct ufs_copy_turn *t)
{
	struct ufs_copy_turn **pp, *prev = NULL;

	if (t->state != UFS_COPY_QUEUED)
		return false;
	for (pp = &l->head; *pp != t; pp = &(*pp)->queue_next)
		prev = *pp;
	*pp = t->queue_next;
	if (l->tail == t)
		l->tail = prev;
	ufs_copy_turn_set(t, UFS_COPY_ENDED);
	return true;
}

void ufs_copy_line_end(struct ufs_copy_line *l, struct ufs_copy_turn *t)
{
	l->njobs--;
	if (l->running == t)
		l->running = NULL;
	if (t->state != UFS_COPY_ENDED)	/* a dequeued one ended already */
		ufs_copy_turn_set(t, UFS_COPY_ENDED);
}
