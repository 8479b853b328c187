// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The in-flight table of a worker (inflight.h): claimed by the worker at
 * dispatch, freed by whoever ends the request, read by anyone, no lock.
 */
#include <string.h>

#include "clock.h"
#include "inflight.h"
#include "req.h"

#define GEN_MASK ((1ull << 48) - 1)

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

void ufs_inflight_begin(struct ufs_inflight *t, struct ufs_req *req)
{
	struct ufs_inflight_slot *s = NULL;
	const char *name = req->args.name;

	req->inflight = NULL;
	for (unsigned int i = 0; i < UFS_INFLIGHT_SLOTS; i++) {
		struct ufs_inflight_slot *c = &t->slots[(t->hint + i) % UFS_INFLIGHT_SLOTS];

		if (!load(&c->e.arrived_ns)) {
			s = c;
			t->hint = (t->hint + i + 1) % UFS_INFLIGHT_SLOTS;
			break;
		}
	}
	if (!s) {
		__atomic_fetch_add(&t->untracked, 1, __ATOMIC_RELAXED);
		return;
	}
	/* Odd while written: a reader copying it now throws the copy away. */
	__atomic_fetch_add(&s->gen, 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&s->e.unique, req->in->unique, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e.nodeid, req->in->nodeid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e.opcode, req->in->opcode, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e.pid, req->in->pid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e.uid, req->caller_uid, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e.waiting, UFS_INFLIGHT_WAIT_NONE, __ATOMIC_RELAXED);
	/* Byte by byte, as the readers copy it: a short name, at most a few stores. */
	for (unsigned int i = 0; i < UFS_INFLIGHT_NAME; i++) {
		char c = name && i < UFS_INFLIGHT_NAME - 1 ? name[i] : '\0';

		__atomic_store_n(&s->e.name[i], c, __ATOMIC_RELAXED);
		if (!c)
			break;
	}
	__atomic_store_n(&s->e.arrived_ns, req->arrived_ns ? req->arrived_ns : 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->gen, 1, __ATOMIC_RELEASE);
	req->inflight = s;
}

void ufs_inflight_end(struct ufs_req *req)
{
	struct ufs_inflight_slot *s = req->inflight;

	if (!s)
		return;
	req->inflight = NULL;
	__atomic_store_n(&s->e.arrived_ns, 0, __ATOMIC_RELEASE);
}

void ufs_inflight_waiting(struct ufs_req *req, uint8_t what)
{
	if (req->inflight)
		__atomic_store_n(&req->inflight->e.waiting, what, __ATOMIC_RELAXED);
}

/* A consistent copy of slot s, or false (free, or changed while copied). */
static bool slot_read(struct ufs_inflight_slot *s, struct ufs_inflight_entry *e, uint64_t *gen)
{
	uint64_t g = load(&s->gen);

	if (g & 1)
		return false;
	e->arrived_ns = load(&s->e.arrived_ns);
	if (!e->arrived_ns)
		return false;
	e->unique = __atomic_load_n(&s->e.unique, __ATOMIC_RELAXED);
	e->nodeid = __atomic_load_n(&s->e.nodeid, __ATOMIC_RELAXED);
	e->opcode = __atomic_load_n(&s->e.opcode, __ATOMIC_RELAXED);
	e->pid = __atomic_load_n(&s->e.pid, __ATOMIC_RELAXED);
	e->uid = __atomic_load_n(&s->e.uid, __ATOMIC_RELAXED);
	e->waiting = __atomic_load_n(&s->e.waiting, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < UFS_INFLIGHT_NAME; i++)
		e->name[i] = __atomic_load_n(&s->e.name[i], __ATOMIC_RELAXED);
	e->name[UFS_INFLIGHT_NAME - 1] = '\0';
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (load(&s->gen) != g)
		return false;
	*gen = g;
	return true;
}

unsigned int ufs_inflight_snapshot(struct ufs_inflight *t, struct ufs_inflight_entry *out,
				   uint64_t *ids, unsigned int max)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < UFS_INFLIGHT_SLOTS && n < max; i++) {
		uint64_t gen;

		if (!slot_read(&t->slots[i], &out[n], &gen))
			continue;
		if (ids)
			ids[n] = (uint64_t)i << 48 | (gen & GEN_MASK);
		n++;
	}
	return n;
}

bool ufs_inflight_warn_once(struct ufs_inflight *t, uint64_t id)
{
	struct ufs_inflight_slot *s = &t->slots[(id >> 48) % UFS_INFLIGHT_SLOTS];
	uint64_t gen = id & GEN_MASK;
	uint64_t old = __atomic_load_n(&s->warned_gen, __ATOMIC_RELAXED);

	/* Only the watch thread writes warned_gen: no race between two askers. */
	if (old == gen + 1)
		return false;
	__atomic_store_n(&s->warned_gen, gen + 1, __ATOMIC_RELAXED);
	return true;
}
