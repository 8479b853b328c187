/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A worker's copy lane as a line (copy_lane.c): the copies admitted, the
 * ones waiting their turn oldest first, and the one running.  Pure
 * bookkeeping: the caller (copy.c) holds the lane's lock around every call.
 */
#ifndef UFS_COPY_LANE_H
#define UFS_COPY_LANE_H

#include <stdbool.h>

enum ufs_copy_state {
	UFS_COPY_NEW,		/* registered, not in its lane's queue yet */
	UFS_COPY_QUEUED,	/* in its lane's queue, waiting for its turn */
	UFS_COPY_RUNNING,	/* its lane's running copy */
	UFS_COPY_ENDED,		/* out of the lane: only the reply is left */
};

/* A copy's place in its lane (in struct ufs_copy_job). */
struct ufs_copy_turn {
	struct ufs_copy_turn *queue_next;
	enum ufs_copy_state state;
};

struct ufs_copy_line {
	struct ufs_copy_turn *head, *tail;	/* UFS_COPY_QUEUED, oldest first */
	struct ufs_copy_turn *running;		/* UFS_COPY_RUNNING, or NULL */
	unsigned int njobs;			/* admitted and not ended: at most max */
};

/* A turn's way through its lane, checked (UFS_BUG_ON a wrong step). */
void ufs_copy_turn_set(struct ufs_copy_turn *t, enum ufs_copy_state to);
/* Room for one more copy (counted), or false when max are admitted. */
bool ufs_copy_line_admit(struct ufs_copy_line *l, unsigned int max);
void ufs_copy_line_unadmit(struct ufs_copy_line *l);
/* At the end of the line, waiting (NEW -> QUEUED). */
void ufs_copy_line_queue(struct ufs_copy_line *l, struct ufs_copy_turn *t);
/* The next turn, now running; NULL while one runs or none waits. */
struct ufs_copy_turn *ufs_copy_line_next(struct ufs_copy_line *l);
/* Out of the line if it waits there (-> ENDED): false if it was not waiting. */
bool ufs_copy_line_dequeue(struct ufs_copy_line *l, struct ufs_copy_turn *t);
/* The copy is over: no longer admitted, nor running (-> ENDED unless dequeued). */
void ufs_copy_line_end(struct ufs_copy_line *l, struct ufs_copy_turn *t);

#endif /* UFS_COPY_LANE_H */
