// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Stopping the io_uring transport: waking and joining the workers, and
 * freeing what set-up made.
 */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "ring_keep.h"
#include "ring_teardown.h"

static void ring_zc_teardown(struct ring_worker *rw)
{
	if (rw->bounce)
		munmap(rw->bounce, rw->bounce_len);
	if (rw->bounce_fd >= 0)
		close(rw->bounce_fd);
	rw->bounce = NULL;
	rw->bounce_fd = -1;
}

static void ring_worker_free(struct ring_worker *rw)
{
	/* Closing the ring also releases zero-copy slots an abort left registered. */
	if (rw->ring_ok)
		io_uring_queue_exit(&rw->ring);
	rw->ring_ok = false;
	ring_zc_teardown(rw);
	if (rw->event_fd >= 0)
		close(rw->event_fd);
	if (rw->fuse_fd >= 0)
		close(rw->fuse_fd);
	for (unsigned int k = 0; k < rw->nqueues; k++)
		free(rw->queues[k].ents);
	free(rw->queues);
	while (rw->adopted) {
		struct ring_ent *next = rw->adopted->next_adopted;

		free(rw->adopted);
		rw->adopted = next;
	}
	ring_mem_free(rw);	/* pools too: they live in the owner's memory file */
	free(rw->unsent);
	pthread_mutex_destroy(&rw->remote_lock);
}

void uring_free(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nrws; i++)
		ring_worker_free(&u->rws[i]);
	free(u->rws);
	uring_old_free(u);
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

void uring_join(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nrws; i++) {
		struct ufs_worker *w = u->rws[i].w;

		if (w->started) {
			pthread_join(w->thread, NULL);
			w->started = false;
		}
	}
}

void ufs_uring_force_stop(struct ufs_daemon *d)
{
	struct ufs_uring *u = d->uring;
	uint64_t one = 1;

	if (!u)
		return;
	for (unsigned int i = 0; i < u->nrws; i++) {
		if (u->rws[i].event_fd >= 0 && write(u->rws[i].event_fd, &one, sizeof(one)) < 0)
			ufs_warn("waking worker %u: %m", i);
	}
}

void ufs_uring_stop(struct ufs_daemon *d)
{
	if (!d->uring)
		return;
	uring_join(d->uring);
	uring_free(d->uring);
	d->uring = NULL;
}
