// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: the hand-over record (record.c): what one daemon writes a
 * successor reads back; a record killed with SIGKILL at any point of its
 * writing holds only whole records; and a file that is not a good record
 * is refused with a reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "tap.h"

/* Everything a node record holds follows from its node id, so a reader can check it. */
static void node_fill(uint64_t id, uint8_t *handle, unsigned int *bytes)
{
	*bytes = 8 + id % 40;
	for (unsigned int i = 0; i < *bytes; i++)
		handle[i] = (uint8_t)(id * 31 + i);
}

static uint32_t node_put(struct ufs_record *r, uint64_t id, uint64_t nlookup)
{
	uint8_t handle[UFS_RECORD_HANDLE_MAX];
	unsigned int bytes;

	node_fill(id, handle, &bytes);
	return ufs_record_node_add(r, id, nlookup, id + 1000, id * 7, S_IFREG, 42, 1, handle, bytes);
}

static bool node_whole(const struct ufs_record_node *n)
{
	uint8_t handle[UFS_RECORD_HANDLE_MAX];
	unsigned int bytes;

	node_fill(n->nodeid, handle, &bytes);
	return n->dev == n->nodeid + 1000 && n->ino == n->nodeid * 7 && n->type == S_IFREG &&
	       n->mount_id == 42 && n->handle_bytes == bytes && !memcmp(n->handle, handle, bytes);
}

static void fake_init(struct ufs_record *r)
{
	uint8_t in[64] = { 7 }, out[80] = { 9 };

	ufs_record_set_init(r, in, sizeof(in), out, sizeof(out), 40);
}

static void test_round_trip(void)
{
	struct ufs_record a, b;
	uint32_t s1, s2, s3;
	char why[256] = "";
	int fd;

	is_int(ufs_record_create(&a, "/src", "/mnt", "allow_other", "workers=2"), 0, "create");
	fake_init(&a);
	s1 = node_put(&a, 2, 1);
	s2 = node_put(&a, 3, 5);
	s3 = node_put(&a, 4, 1);
	ok(s1 && s2 && s3 && s1 != s2 && s2 != s3, "three node slots");
	ufs_record_node_lookups(&a, s2, 6);
	ufs_record_node_parent(&a, s2, 4);
	ufs_record_node_drop(&a, s1);
	ufs_record_node_set_flags(&a, s3, UFS_RECORD_NODE_EXPORTED);
	ufs_record_next_nodeid(&a, 5);
	ufs_record_file_set(&a, 3, 9, 3, O_RDWR, UFS_RECORD_FILE, 2, 17, 0);

	fd = dup(a.fd);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), 0, "attach a live record");
	ok(!strcmp(b.hdr->source, "/src") && !strcmp(b.hdr->mountpoint, "/mnt") &&
		   !strcmp(b.hdr->options, "allow_other") && !strcmp(b.hdr->settings, "workers=2"),
	   "source, mountpoint, options and settings read back");
	is_int(b.hdr->next_nodeid, 5, "next node id");
	is_int(b.nodes[s1 - 1].nodeid, 0, "a dropped node is free");
	ok(b.nodes[s2 - 1].nodeid == 3 && b.nodes[s2 - 1].nlookup == 6 &&
		   node_whole(&b.nodes[s2 - 1]),
	   "a node with its lookups and handle");
	ok(b.nodes[s2 - 1].parent == 4 && b.nodes[s2 - 1].flags == 0,
	   "a live node's parent, not exported");
	is_int(b.nodes[s3 - 1].flags, UFS_RECORD_NODE_EXPORTED, "an exported node keeps its flag");
	ok(b.files[3].nodeid == 3 && b.files[3].gen == 9 && b.files[3].flags == O_RDWR &&
		   b.files[3].backing_id == 17 && b.files[3].kind == UFS_RECORD_FILE,
	   "an open file at its index");
	is_int(b.hdr->files_hwm, 4, "files high-water mark");
	is_int(b.node_free_n, 1, "the attached record knows its one free node slot");
	is_int(node_put(&b, 6, 1), s1, "and reuses it first");
	ufs_record_file_drop(&b, 3);
	is_int(a.files[3].nodeid, 0, "both mappings see one file");
	ufs_record_close(&b);
	ufs_record_close(&a);
}

static void test_refusals(void)
{
	struct ufs_record a, b;
	char why[256];
	int fd;

	is_int(ufs_record_create(&a, "/s", "/m", "", ""), 0, "create");
	why[0] = 0;
	fd = dup(a.fd);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), -EINVAL, "no INIT yet: refused");
	ok(strstr(why, "no INIT") != NULL, "  says why: %s", why);
	close(fd);

	fake_init(&a);
	a.hdr->incomplete = 1;
	fd = dup(a.fd);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), -EINVAL, "incomplete: refused");
	ok(strstr(why, "incomplete") != NULL, "  says why: %s", why);
	close(fd);
	a.hdr->incomplete = 0;

	a.hdr->nodes_hwm = a.hdr->nodes_cap + 1;
	fd = dup(a.fd);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), -EINVAL, "hwm past capacity: refused");
	close(fd);
	a.hdr->nodes_hwm = 0;

	a.hdr->magic = 0;
	fd = dup(a.fd);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), -EINVAL, "bad magic: refused");
	ok(strstr(why, "not a uringfs") != NULL, "  says why: %s", why);
	close(fd);
	ufs_record_close(&a);

	fd = memfd_create("short", 0);
	is_int(ufs_record_attach(&b, fd, why, sizeof(why)), -EINVAL, "empty file: refused");
	ok(strstr(why, "too short") != NULL, "  says why: %s", why);
	close(fd);
}

/*
 * A child writes records as fast as it can, adding, recounting, dropping
 * and reusing slots, until it is killed; every record the parent then finds
 * valid must be whole, and every node must count at least the lookups the
 * child had published for it.
 */
static void writer(struct ufs_record *r, uint64_t *published)
{
	uint32_t slots[512] = { 0 };
	uint64_t id = 2;

	for (unsigned int round = 0;; round++) {
		unsigned int k = round % 512;

		if (slots[k]) {
			ufs_record_node_drop(r, slots[k]);
			slots[k] = 0;
		}
		slots[k] = node_put(r, id, 1);
		ufs_record_node_lookups(r, slots[k], 1 + round % 5);
		ufs_record_file_set(r, k, round, id, O_RDONLY, UFS_RECORD_FILE, 1, 0, 0);
		__atomic_store_n(published, id, __ATOMIC_RELEASE);
		id++;
	}
}

static void test_kill9(void)
{
	unsigned int bad = 0, valid_total = 0;

	srand(time(NULL));
	for (int run = 0; run < 20; run++) {
		struct ufs_record a, b;
		uint64_t *published = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		char why[256];
		pid_t pid;
		int fd;

		if (ufs_record_create(&a, "/s", "/m", "", "")) {
			printf("# run %d: ufs_record_create failed\n", run);
			bad++;
			continue;
		}
		fake_init(&a);
		/* The writer's first node is 2: before it publishes, 2 is in flight. */
		*published = 1;
		pid = fork();
		if (!pid) {
			writer(&a, published);
			_exit(0);
		}
		usleep(1000 + rand() % 20000);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fd = dup(a.fd);
		if (ufs_record_attach(&b, fd, why, sizeof(why))) {
			printf("# run %d: attach refused: %s\n", run, why);
			bad++;
			ufs_record_close(&a);
			continue;
		}
		for (uint32_t i = 0; i < b.hdr->nodes_hwm; i++) {
			const struct ufs_record_node *n = &b.nodes[i];

			if (!n->nodeid)
				continue;
			valid_total++;
			if (!node_whole(n) || !n->nlookup || n->nodeid > *published + 1) {
				printf("# run %d: node slot %u: nodeid %llu (published %llu) nlookup %llu"
				       " whole %d\n", run, i, (unsigned long long)n->nodeid,
				       (unsigned long long)*published, (unsigned long long)n->nlookup,
				       node_whole(n));
				bad++;
			}
		}
		for (uint32_t i = 0; i < b.hdr->files_hwm; i++) {
			if (b.files[i].nodeid && (b.files[i].flags != O_RDONLY ||
						  b.files[i].kind != UFS_RECORD_FILE)) {
				printf("# run %d: file %u: nodeid %llu flags %#x kind %u\n", run, i,
				       (unsigned long long)b.files[i].nodeid, (unsigned)b.files[i].flags,
				       (unsigned)b.files[i].kind);
				bad++;
			}
		}
		ufs_record_close(&b);
		ufs_record_close(&a);
		munmap(published, 4096);
	}
	ok(valid_total > 0, "killed writers left records (%u)", valid_total);
	is_int(bad, 0, "every record a killed writer left valid is whole");
}

int main(void)
{
	test_round_trip();
	test_refusals();
	test_kill9();
	return t_done();
}
