// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What a successor needs of a worker's ring (ring_keep.h): its memory in a
 * memory file at an address the file names, the record of each entry's
 * request, and, in a successor, a predecessor's memory mapped back where
 * it was and the requests its entries hold taken over.
 *
 * An entry's record, for the request the kernel last put in its buffers
 * (unique u, in the header the kernel writes):
 *
 *	word			the request in the buffers is
 *	----			-----------------------------
 *	not u			new: never seen, intact (the kernel wrote it last)
 *	u | SEEN		being served: saved_* hold it as it arrived, the
 *				buffers may hold part of a reply
 *	u | READY		answered: the whole reply is in the buffers; its
 *				commit may or may not have reached the kernel
 *	u | SENT		answered, and the kernel has taken the commit
 *
 * A commit the kernel already took is harmless to send again: the unique
 * is no longer in its processing list (ENOENT), or the entry has a new
 * request with another unique.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "ring_keep.h"

#define PAGE_UP(x) (((x) + 4095) & ~(size_t)4095)

/* ---- a worker's own memory ---- */

static unsigned int worker_nents(const struct ring_worker *rw)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < rw->nqueues; i++)
		n += rw->queues[i].nents;
	return n;
}

/*
 * The memory file: header, records, headers, then the payloads (per-entry
 * mode) or the pools of the queues this worker owns (bufpool mode; a
 * successor's queues keep the pools the kernel already has).  Sparse: a
 * page costs memory once written.
 */
int ring_mem_build(struct ring_worker *rw)
{
	struct ufs_uring *u = rw->u;
	size_t nents = worker_nents(rw), off, hdr_len, recs_off, headers_off, tail_off;
	unsigned int npools = 0;
	struct ring_mem_header *h;
	void *p;

	for (unsigned int i = 0; u->bufpool && i < rw->nqueues; i++)
		npools += rw->queues[i].owner && !u->inherited;
	hdr_len = sizeof(*h) + npools * sizeof(struct ring_mem_pool);
	recs_off = PAGE_UP(hdr_len);
	headers_off = PAGE_UP(recs_off + nents * sizeof(struct ring_ent_rec));
	tail_off = PAGE_UP(headers_off + nents * sizeof(struct ufs_uring_req_header));
	off = tail_off + (u->bufpool ? npools * PAGE_UP((size_t)u->pool_bufs * u->max_payload) :
					 nents * u->max_payload);
	rw->mem_fd = memfd_create("uringfs-ring", MFD_CLOEXEC);
	if (rw->mem_fd < 0)
		return -errno;
	if (ftruncate(rw->mem_fd, off))
		return -errno;
	p = mmap(NULL, off, PROT_READ | PROT_WRITE, MAP_SHARED, rw->mem_fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	rw->mem = p;
	rw->mem_len = off;
	h = p;
	h->magic = RING_MEM_MAGIC;
	h->version = RING_MEM_VERSION;
	h->nents = nents;
	h->base = (uintptr_t)p;
	h->len = off;
	h->max_payload = u->max_payload;
	h->recs_off = recs_off;
	h->bufpool = u->bufpool;
	rw->recs = (void *)(rw->mem + recs_off);
	rw->headers = (void *)(rw->mem + headers_off);
	if (!u->bufpool) {
		rw->payloads = rw->mem + tail_off;
		return 0;
	}
	off = tail_off;
	for (unsigned int i = 0; i < rw->nqueues; i++) {
		struct ring_queue *q = &rw->queues[i];

		if (!q->owner || u->inherited)
			continue;
		q->pool_len = (size_t)u->pool_bufs * u->max_payload;
		q->pool = rw->mem + off;
		h->pools[h->npools++] = (struct ring_mem_pool){ .qid = q->qid, .off = off,
								.len = q->pool_len };
		off += PAGE_UP(q->pool_len);
	}
	return 0;
}

void ring_mem_free(struct ring_worker *rw)
{
	if (rw->mem)
		munmap(rw->mem, rw->mem_len);
	if (rw->mem_fd >= 0)
		close(rw->mem_fd);
	rw->mem = NULL;
	rw->mem_fd = -1;
}

/* ---- the records ---- */

/* The request in ent's buffers is about to be served: keep it as it is. */
void ring_rec_seen(struct ring_ent *ent, const void *payload, size_t len)
{
	struct ring_ent_rec *rec = ent->rec;
	uint64_t unique = ufs_uring_req_in(ent->hdr)->unique;

	len = len < RING_REC_PAYLOAD ? len : RING_REC_PAYLOAD;
	/* Whatever word says now stays true while the copy is made. */
	memcpy(&rec->saved_hdr, ent->hdr, sizeof(rec->saved_hdr));
	memcpy(rec->saved_payload, payload, len);
	rec->saved_len = len;
	__atomic_store_n(&rec->word, (unique & ~RING_REC_STATE) | RING_REC_SEEN, __ATOMIC_RELEASE);
}

/* Its reply is whole in the buffers; the commit goes out with the next submit. */
void ring_rec_ready(struct ring_worker *rw, struct ring_ent *ent)
{
	uint64_t unique = ((const struct fuse_out_header *)ent->hdr->in_out)->unique;

	__atomic_store_n(&ent->rec->word, (unique & ~RING_REC_STATE) | RING_REC_READY,
			 __ATOMIC_RELEASE);
	if (rw->nunsent == rw->unsent_cap) {
		unsigned int cap = rw->unsent_cap ? 2 * rw->unsent_cap : 64;
		struct ring_ent **p = realloc(rw->unsent, cap * sizeof(*p));

		if (!p)
			return;	/* stays READY: a successor's commit finds nothing (ENOENT) */
		rw->unsent = p;
		rw->unsent_cap = cap;
	}
	rw->unsent[rw->nunsent++] = ent;
}

/*
 * A submit returned: the kernel has taken every commit queued before it
 * (a FUSE command is issued inline), and may have put a new request in the
 * entry already, whose unique the kernel wrote: only a READY word of this
 * request's unique becomes SENT.
 */
void ring_rec_sent(struct ring_worker *rw)
{
	for (unsigned int i = 0; i < rw->nunsent; i++) {
		struct ring_ent_rec *rec = rw->unsent[i]->rec;
		uint64_t word = __atomic_load_n(&rec->word, __ATOMIC_RELAXED);

		if ((word & RING_REC_STATE) == RING_REC_READY)
			__atomic_store_n(&rec->word, word | RING_REC_SENT, __ATOMIC_RELEASE);
	}
	rw->nunsent = 0;
}

/* ---- a successor: the predecessor's memory, where it was ---- */

static int old_check(const struct ring_mem_header *h, size_t len, char *why, size_t why_len)
{
	size_t pools_end = sizeof(*h) + (size_t)h->npools * sizeof(struct ring_mem_pool);

	if (len < sizeof(*h) || h->magic != RING_MEM_MAGIC || h->version != RING_MEM_VERSION) {
		snprintf(why, why_len, "a ring memory file of another version");
		return -EINVAL;
	}
	if (h->len != len || pools_end > h->recs_off ||
	    h->recs_off + (size_t)h->nents * sizeof(struct ring_ent_rec) > len ||
	    h->base % 4096) {
		snprintf(why, why_len, "a ring memory file with an inconsistent header");
		return -EINVAL;
	}
	return 0;
}

int uring_old_map(struct ufs_uring *u, const int *fds, unsigned int n, char *why,
		  size_t why_len)
{
	u->old = calloc(n ? n : 1, sizeof(*u->old));
	if (!u->old)
		return -ENOMEM;
	for (unsigned int i = 0; i < n; i++) {
		struct ring_mem_header h;
		struct ring_old *o = &u->old[u->nold];
		struct stat st;
		void *p;
		int ret;

		if (fstat(fds[i], &st) || pread(fds[i], &h, sizeof(h), 0) != sizeof(h)) {
			snprintf(why, why_len, "reading a ring memory file: %m");
			return -EIO;
		}
		ret = old_check(&h, st.st_size, why, why_len);
		if (ret)
			return ret;
		/* The kernel holds these addresses: nothing else may sit there. */
		p = mmap((void *)(uintptr_t)h.base, h.len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED_NOREPLACE, fds[i], 0);
		if (p == MAP_FAILED || p != (void *)(uintptr_t)h.base) {
			snprintf(why, why_len, "cannot map a predecessor's ring memory back at %p: %s",
				 (void *)(uintptr_t)h.base, p == MAP_FAILED ? strerror(errno) :
				 "the kernel put it elsewhere");
			if (p != MAP_FAILED)
				munmap(p, h.len);
			return -EADDRINUSE;
		}
		o->fd = fds[i];
		o->base = p;
		o->len = h.len;
		o->h = p;
		u->nold++;
	}
	return 0;
}

/* ADD_QUEUE gave q zero copy: its pool's entry says so, for a successor. */
void ring_mem_pool_zero_copy(struct ring_worker *rw, const struct ring_queue *q)
{
	struct ring_mem_header *h = (void *)rw->mem;

	for (unsigned int k = 0; k < h->npools; k++) {
		if (h->pools[k].qid == q->qid)
			h->pools[k].zero_copy = q->zero_copy;
	}
}

/* The pool the kernel has for qid, from a predecessor's memory (bufpool mode). */
uint8_t *uring_old_pool(struct ufs_uring *u, uint16_t qid, size_t *len, bool *zero_copy)
{
	for (unsigned int i = 0; i < u->nold; i++) {
		const struct ring_mem_header *h = u->old[i].h;

		for (unsigned int k = 0; k < h->npools; k++) {
			if (h->pools[k].qid == qid) {
				*len = h->pools[k].len;
				*zero_copy = h->pools[k].zero_copy;
				return u->old[i].base + h->pools[k].off;
			}
		}
	}
	return NULL;
}

/*
 * The highest zero-copy slot a predecessor's entry of rw's queues has: an
 * entry this worker adopts keeps its slot, now in this worker's buffer
 * table, so the worker's own entries take the slots above.
 */
unsigned int uring_old_max_slot(struct ufs_uring *u, const struct ring_worker *rw)
{
	unsigned int max = 0;

	for (unsigned int i = 0; i < u->nold; i++) {
		const struct ring_ent_rec *recs = (const void *)(u->old[i].base + u->old[i].h->recs_off);

		for (unsigned int e = 0; e < u->old[i].h->nents; e++) {
			for (unsigned int k = 0; k < rw->nqueues; k++) {
				if (recs[e].qid == rw->queues[k].qid && recs[e].slot > max)
					max = recs[e].slot;
			}
		}
	}
	return max;
}

/* The worker that owns queue qid's share, or NULL. */
static struct ring_queue *queue_owner(struct ufs_uring *u, uint16_t qid)
{
	for (unsigned int i = 0; i < u->nrws; i++) {
		for (unsigned int k = 0; k < u->rws[i].nqueues; k++) {
			struct ring_queue *q = &u->rws[i].queues[k];

			if (q->qid == qid && q->owner)
				return q;
		}
	}
	return NULL;
}

/*
 * Which of an old entry's requests is ours to answer, and how: a request
 * to serve (restored from its record if it was being served: *replay, it
 * may have been carried out), a reply to commit as it is, or nothing.
 */
static enum ring_ent_state old_ent_plan(struct ring_ent_rec *rec, struct ufs_uring_req_header *hdr,
					struct ufs_uring *u, uint8_t *payload, bool *replay)
{
	uint64_t unique = ufs_uring_req_in(hdr)->unique;
	uint64_t word = __atomic_load_n(&rec->word, __ATOMIC_ACQUIRE);

	if (!unique)
		return RING_ENT_NEW;		/* never carried a request */
	if ((word & ~RING_REC_STATE) != (unique & ~RING_REC_STATE))
		return RING_ENT_SERVING;	/* new, intact */
	if ((word & RING_REC_STATE) == RING_REC_SENT)
		return RING_ENT_NEW;		/* answered and committed: nothing held */
	if ((word & RING_REC_STATE) == RING_REC_READY)
		return RING_ENT_KERNEL;		/* answered: the commit goes (again) */
	/* Being served when its daemon went: back as it arrived, and served again. */
	memcpy(hdr, &rec->saved_hdr, sizeof(*hdr));
	if (payload)
		memcpy(payload, rec->saved_payload,
		       rec->saved_len < RING_REC_PAYLOAD ? rec->saved_len : RING_REC_PAYLOAD);
	(void)u;
	*replay = true;
	return RING_ENT_SERVING;
}

/*
 * After the predecessor has gone: every request its entries hold goes to
 * the worker of its queue, which answers it from its own ring and so makes
 * the entry its own.  Returns how many.
 */
unsigned int uring_adopt(struct ufs_uring *u)
{
	unsigned int total = 0;
	uint64_t one = 1;

	for (unsigned int i = 0; i < u->nold; i++) {
		struct ring_old *o = &u->old[i];
		struct ring_ent_rec *recs = (void *)(o->base + o->h->recs_off);

		for (unsigned int e = 0; e < o->h->nents; e++) {
			struct ring_ent_rec *rec = &recs[e];
			struct ufs_uring_req_header *hdr;
			struct ring_queue *q;
			struct ring_ent *ent;
			uint8_t *payload = NULL;
			enum ring_ent_state plan;
			bool replay = false;

			/* The record is the old daemon's word: nothing in it is trusted. */
			if (rec->hdr_off > o->len || o->len - rec->hdr_off < sizeof(*hdr) ||
			    (rec->payload_off && (rec->payload_off > o->len ||
						  o->len - rec->payload_off < u->max_payload)))
				continue;
			hdr = (void *)(o->base + rec->hdr_off);
			q = queue_owner(u, rec->qid);
			if (rec->payload_off)
				payload = o->base + rec->payload_off;
			else if (q && q->pool &&
				 hdr->ring_ent_in_out.offset + u->max_payload <= q->pool_len)
				payload = q->pool + hdr->ring_ent_in_out.offset;
			plan = old_ent_plan(rec, hdr, u, payload, &replay);
			if (plan == RING_ENT_NEW)
				continue;
			ent = q ? calloc(1, sizeof(*ent)) : NULL;
			if (!ent) {
				ufs_err("io_uring: cannot take over a request held on qid=%u: %s",
					rec->qid, q ? "out of memory" : "no worker serves that queue");
				continue;
			}
			ent->q = q;
			ent->rec = rec;
			ent->hdr = hdr;
			ent->payload = rec->payload_off ? payload : NULL;
			ent->slot = rec->slot;
			ent->idx = rec->slot ? rec->slot - 1u : 0;	/* its bounce region */
			ent->req.worker = q->rw->w;
			ent->req.replay = replay;	/* it may have been carried out */
			ent->held_over = plan == RING_ENT_SERVING;
			ent->state = RING_ENT_ADOPTED;
			ent->adopted = true;
			ent->ready = plan == RING_ENT_KERNEL;
			/* An UNLINK beside it waits for it (worker.h: batch_releases). */
			if (!ent->ready && ufs_uring_req_in(hdr)->opcode == FUSE_RELEASE) {
				ent->release_counted = true;
				ufs_worker_hold_releases(q->rw->w, 1,
							 ufs_release_bit(ufs_uring_req_in(hdr)->nodeid));
			}
			pthread_mutex_lock(&q->rw->remote_lock);
			ent->remote_next = q->rw->adopt_head;
			q->rw->adopt_head = ent;
			pthread_mutex_unlock(&q->rw->remote_lock);
			o->adopted++;
			if (o->is_adopted)
				o->is_adopted[e] = true;
			total++;
		}
	}
	for (unsigned int i = 0; i < u->nrws; i++) {
		if (u->rws[i].adopt_head && write(u->rws[i].event_fd, &one, sizeof(one)) < 0)
			ufs_warn("waking worker %u: %m", i);
	}
	return total;
}

/*
 * The kernel gives requests that waited for an entry (while no daemon
 * served) only to an entry that commits on their queue: one request from
 * each queue's CPU makes one commit there.  statx with FORCE_SYNC always
 * asks the daemon.
 */
static void *kick_one(void *arg)
{
	const char *mountpoint = ((const char **)arg)[0];
	struct statx stx;

	statx(AT_FDCWD, mountpoint, AT_STATX_FORCE_SYNC, STATX_MODE, &stx);
	return NULL;
}

void uring_kick_queues(struct ufs_uring *u, const char *mountpoint)
{
	const char *arg[1] = { mountpoint };

	for (unsigned int qid = 0; qid < u->nr_queues; qid++) {
		pthread_attr_t attr;
		pthread_t t;
		cpu_set_t set;

		if (qid >= CPU_SETSIZE)
			break;
		CPU_ZERO(&set);
		CPU_SET(qid, &set);
		pthread_attr_init(&attr);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		if (!pthread_create(&t, &attr, kick_one, arg))
			pthread_join(t, NULL);
		else
			ufs_dbg("io_uring: cannot run on CPU %u to wake its queue", qid);
		pthread_attr_destroy(&attr);
	}
}

/*
 * After adoption: a predecessor's file the kernel no longer uses goes, and
 * of one it does, the payloads of entries that are gone are given back
 * (their headers share pages with live ones: they stay).
 */
void uring_old_trim(struct ufs_uring *u)
{
	unsigned int kept = 0;

	for (unsigned int i = 0; i < u->nold; i++) {
		struct ring_old *o = &u->old[i];
		struct ring_ent_rec *recs = (void *)(o->base + o->h->recs_off);

		if (!o->adopted && !o->h->npools) {
			munmap(o->base, o->len);
			close(o->fd);
			free(o->is_adopted);
			continue;
		}
		for (unsigned int e = 0; e < o->h->nents; e++) {
			/* Only entries holding a request outlive their daemon: ours now. */
			if (!recs[e].payload_off || (o->is_adopted && o->is_adopted[e]))
				continue;
			fallocate(o->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  recs[e].payload_off, u->max_payload);
		}
		u->old[kept++] = *o;
	}
	u->nold = kept;
}

void uring_old_free(struct ufs_uring *u)
{
	for (unsigned int i = 0; i < u->nold; i++) {
		munmap(u->old[i].base, u->old[i].len);
		close(u->old[i].fd);
		free(u->old[i].is_adopted);
	}
	free(u->old);
	u->old = NULL;
	u->nold = 0;
}
