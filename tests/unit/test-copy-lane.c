// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A worker's copy lane (daemon/copy_lane.c): copies take their turns one
 * at a time in the order they came, a waiting one can be taken out
 * (INTERRUPT), and the lane admits a bounded number.
 */
#include "copy_lane.h"
#include "tap.h"

#define N 5

static struct ufs_copy_line line;
static struct ufs_copy_turn turns[N];

static int idx(const struct ufs_copy_turn *t)
{
	return t ? (int)(t - turns) : -1;
}

static void reset(void)
{
	line = (struct ufs_copy_line){ 0 };
	for (int i = 0; i < N; i++)
		turns[i] = (struct ufs_copy_turn){ 0 };
}

/* Admitted and queued, as ufs_copy_start does. */
static void arrive(int i)
{
	ufs_copy_line_admit(&line, 256);
	ufs_copy_line_queue(&line, &turns[i]);
}

/* The running copy ends and the next takes its turn: the next's index. */
static int finish_and_next(void)
{
	ufs_copy_line_end(&line, line.running);
	return idx(ufs_copy_line_next(&line));
}

static void test_turns(void)
{
	reset();
	is_int(idx(ufs_copy_line_next(&line)), -1, "an empty lane has no turn to give");
	for (int i = 0; i < 4; i++)
		arrive(i);
	is_int(turns[2].state, UFS_COPY_QUEUED, "a queued copy waits");
	is_int(idx(ufs_copy_line_next(&line)), 0, "the first to come runs first");
	is_int(turns[0].state, UFS_COPY_RUNNING, "and is running");
	is_int(idx(ufs_copy_line_next(&line)), -1, "one at a time: no turn while one runs");
	arrive(4);
	is_int(finish_and_next(), 1, "then the second");
	is_int(turns[0].state, UFS_COPY_ENDED, "the first has ended");
	is_int(finish_and_next(), 2, "then the third");
	is_int(finish_and_next(), 3, "then the fourth");
	is_int(finish_and_next(), 4, "the one that came while others ran waits for all before it");
	is_int(finish_and_next(), -1, "and the lane is empty after the last");
	is_int(line.njobs, 0, "nothing admitted is left");
	ok(!line.head && !line.tail && !line.running, "no head, tail or running copy");
}

static void test_cancel(void)
{
	reset();
	for (int i = 0; i < 5; i++)
		arrive(i);
	is_int(idx(ufs_copy_line_next(&line)), 0, "0 runs");
	ok(!ufs_copy_line_dequeue(&line, &turns[0]), "the running copy is not taken out of line");
	is_int(turns[0].state, UFS_COPY_RUNNING, "and still runs (its chunk is stopped elsewhere)");
	ok(ufs_copy_line_dequeue(&line, &turns[2]), "a waiting copy in the middle is taken out");
	is_int(turns[2].state, UFS_COPY_ENDED, "and has ended");
	ok(!ufs_copy_line_dequeue(&line, &turns[2]), "taking it out twice finds it gone");
	ufs_copy_line_end(&line, &turns[2]);
	is_int(turns[2].state, UFS_COPY_ENDED, "its end after the dequeue is no second transition");
	ok(ufs_copy_line_dequeue(&line, &turns[4]), "the last waiting copy is taken out");
	ok(line.tail == &turns[3], "the tail is then the one before it");
	ufs_copy_line_end(&line, &turns[4]);
	turns[4] = (struct ufs_copy_turn){ 0 };	/* a new copy's turn starts NEW */
	arrive(4); /* a new copy (in the freed slot) goes behind 3 */
	is_int(finish_and_next(), 1, "the turns skip the ones taken out: 1");
	is_int(finish_and_next(), 3, "then 3");
	is_int(finish_and_next(), 4, "then the newcomer, behind them");
	is_int(finish_and_next(), -1, "then none");
	is_int(line.njobs, 0, "every admission ended");

	reset();
	arrive(0);
	arrive(1);
	ok(ufs_copy_line_dequeue(&line, &turns[0]), "the head, waiting, is taken out");
	ok(line.head == &turns[1], "the next becomes the head");
	is_int(idx(ufs_copy_line_next(&line)), 1, "and gets the turn");
	ufs_copy_line_end(&line, &turns[0]);
	ufs_copy_line_end(&line, &turns[1]);
	ok(!line.running && !line.head, "all gone");

	reset();
	ufs_copy_line_admit(&line, 256);
	ufs_copy_line_end(&line, &turns[0]);
	is_int(turns[0].state, UFS_COPY_ENDED, "a copy interrupted before it queued ends from NEW");
	is_int(line.njobs, 0, "and frees its admission");
}

static void test_admit(void)
{
	reset();
	ok(ufs_copy_line_admit(&line, 2), "admitted 1 of 2");
	ok(ufs_copy_line_admit(&line, 2), "admitted 2 of 2");
	ok(!ufs_copy_line_admit(&line, 2), "a third is refused (the kernel copies it)");
	is_int(line.njobs, 2, "the refused one is not counted");
	ufs_copy_line_unadmit(&line);
	ok(ufs_copy_line_admit(&line, 2), "an admission given back makes room");
}

int main(void)
{
	test_turns();
	test_cancel();
	test_admit();
	return t_done();
}
