// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A worker's in-flight table (inflight.c): a request is listed from its
 * dispatch to its end, with what it carried; a wait marks it; the watch
 * warns once per request, again for the next one in the same slot; a full
 * table serves the request untracked.
 */
#include <string.h>

#include "inflight.h"
#include "req.h"
#include "tap.h"

static struct ufs_inflight table;

static void fill(struct ufs_req *req, struct fuse_in_header *in, uint64_t unique, const char *name)
{
	memset(req, 0, sizeof(*req));
	memset(in, 0, sizeof(*in));
	in->unique = unique;
	in->nodeid = 40 + unique;
	in->opcode = FUSE_OPEN;
	in->pid = 1000 + unique;
	in->uid = 7;
	req->caller_uid = 7;	/* dispatch.c: in->uid, or the caller's own under idmap */
	req->in = in;
	req->arrived_ns = 5000 + unique;
	req->args.name = name;
}

static unsigned int listed(struct ufs_inflight_entry *e, uint64_t *ids)
{
	static struct ufs_inflight_entry scratch[UFS_INFLIGHT_SLOTS];

	return ufs_inflight_snapshot(&table, e ? e : scratch, ids, UFS_INFLIGHT_SLOTS);
}

static void test_listed_until_done(void)
{
	static struct ufs_inflight_entry e[UFS_INFLIGHT_SLOTS];
	struct fuse_in_header in;
	struct ufs_req req;
	uint64_t ids[UFS_INFLIGHT_SLOTS];

	fill(&req, &in, 1, "a-name-longer-than-the-slot-keeps-of-it-0123456789-abcdef");
	ufs_inflight_begin(&table, &req);
	ok(req.inflight, "a slot for the request");
	is_int(listed(e, ids), 1, "one request in flight");
	is_int(e[0].unique, 1, "its unique");
	is_int(e[0].nodeid, 41, "its node id");
	is_int(e[0].pid, 1001, "its pid");
	is_int(e[0].uid, 7, "its uid");
	is_int(e[0].arrived_ns, 5001, "its arrival");
	is_int(e[0].waiting, UFS_INFLIGHT_WAIT_NONE, "not waiting");
	is_int(strlen(e[0].name), UFS_INFLIGHT_NAME - 1, "its name, cut short");
	ok(ufs_inflight_warn_once(&table, ids[0]), "warned the first time");
	ok(!ufs_inflight_warn_once(&table, ids[0]), "not twice");
	ufs_inflight_waiting(&req, UFS_INFLIGHT_WAIT_LOCK);
	listed(e, NULL);
	is_int(e[0].waiting, UFS_INFLIGHT_WAIT_LOCK, "a lock wait marked");
	ufs_inflight_end(&req);
	ok(!req.inflight, "ended");
	is_int(listed(NULL, NULL), 0, "nothing in flight after its end");
}

static void test_slot_reused(void)
{
	struct ufs_inflight_entry e[1];
	struct fuse_in_header in;
	struct ufs_req req;
	uint64_t first, second;

	table.hint = 0;
	fill(&req, &in, 2, NULL);
	ufs_inflight_begin(&table, &req);
	ufs_inflight_snapshot(&table, e, &first, 1);
	is_str(e[0].name, "", "no name");
	ok(ufs_inflight_warn_once(&table, first), "the first request warned");
	ufs_inflight_end(&req);
	table.hint = 0;
	fill(&req, &in, 3, "b");
	ufs_inflight_begin(&table, &req);
	ufs_inflight_snapshot(&table, e, &second, 1);
	ok((first >> 48) == (second >> 48), "the same slot again");
	is_int(e[0].unique, 3, "the next request in it");
	is_str(e[0].name, "b", "its name");
	ok(ufs_inflight_warn_once(&table, second), "the next request in that slot warned too");
	ufs_inflight_end(&req);
}

static void test_full(void)
{
	static struct ufs_req reqs[UFS_INFLIGHT_SLOTS + 1];
	static struct fuse_in_header ins[UFS_INFLIGHT_SLOTS + 1];

	for (unsigned int i = 0; i <= UFS_INFLIGHT_SLOTS; i++) {
		fill(&reqs[i], &ins[i], 100 + i, NULL);
		ufs_inflight_begin(&table, &reqs[i]);
	}
	is_int(listed(NULL, NULL), UFS_INFLIGHT_SLOTS, "a full table");
	ok(!reqs[UFS_INFLIGHT_SLOTS].inflight, "the one more is untracked");
	is_int(table.untracked, 1, "and counted");
	ufs_inflight_end(&reqs[UFS_INFLIGHT_SLOTS]); /* untracked: nothing to free */
	for (unsigned int i = 0; i < UFS_INFLIGHT_SLOTS; i++)
		ufs_inflight_end(&reqs[i]);
	is_int(listed(NULL, NULL), 0, "all ended");
}

int main(void)
{
	test_listed_until_done();
	test_slot_reused();
	test_full();
	return t_done();
}
