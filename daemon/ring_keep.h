/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a successor needs of a worker's ring (ring_keep.c): the layout of
 * a worker's memory file and each entry's record, and their functions.
 */
#ifndef UFS_RING_KEEP_H
#define UFS_RING_KEEP_H

#include "ring_types.h"

/*
 * The kernel knows an entry's buffers only by their address in the
 * process that registered it, and keeps them (with the request an entry
 * holds) when that process dies.  So a worker's header, payload and pool
 * memory lives in one memory file mapped at an address written in its
 * header, and a successor maps it at the same address: it can then read
 * a request an entry holds and commit its reply from its own ring, which
 * makes the entry its own.  Each entry has a record beside it saying how
 * far its current request got, written in an order a reader can check
 * after kill -9 at any instruction.
 */
#define RING_MEM_MAGIC 0x314d52534655ULL	/* "UFSRM1" */
#define RING_MEM_VERSION 1
/*
 * A reply overwrites at most this much of a request's payload that a
 * second try of the request still needs: a reply longer than this belongs
 * to a request whose own payload is a name (GETXATTR) or nothing (READ,
 * READDIR, LISTXATTR, READLINK); a WRITE's reply is 8 bytes.
 */
#define RING_REC_PAYLOAD 512

/* rec->word: the unique of the request the entry holds, and how far it got. */
#define RING_REC_SEEN (1ULL << 61)	/* being served: saved[] has the request */
#define RING_REC_READY (2ULL << 61)	/* its whole reply is in the buffers */
#define RING_REC_SENT (3ULL << 61)	/* and the kernel has taken the commit */
#define RING_REC_STATE (3ULL << 61)

/*
 * An entry's record: written only by its worker thread (ring_setup.c at
 * build, ring_register.c at REGISTER, ring_rec_*() while serving), read by
 * a successor (uring_adopt).
 */
struct ring_ent_rec {
	uint64_t word;			/* unique | state; one store */
	uint16_t qid;
	uint16_t slot;			/* zero copy: the kernel's slot index for it */
	uint32_t saved_len;		/* payload bytes in saved_payload */
	uint64_t hdr_off;		/* its header buffer, from the file's start */
	uint64_t payload_off;		/* its payload buffer; 0 in bufpool mode */
	struct ufs_uring_req_header saved_hdr;	/* the request as it arrived */
	uint8_t saved_payload[RING_REC_PAYLOAD];
};

struct ring_mem_pool {
	uint16_t qid;
	uint8_t zero_copy;		/* the queue was added with FUSE_URING_ZERO_COPY */
	uint8_t pad[5];
	uint64_t off, len;
};

/* At the start of a worker's memory file. */
struct ring_mem_header {
	uint64_t magic;
	uint32_t version;
	uint32_t nents;
	uint64_t base;			/* where it is mapped: the kernel's addresses */
	uint64_t len;
	uint64_t max_payload;
	uint64_t recs_off;		/* struct ring_ent_rec[nents] */
	uint32_t bufpool;		/* queue mode of the connection */
	uint32_t npools;
	struct ring_mem_pool pools[];	/* the queues' pools this worker owned */
};

/* A predecessor's memory file, mapped where it was: the main thread's (u->old). */
struct ring_old {
	int fd;
	uint8_t *base;
	size_t len;
	const struct ring_mem_header *h;
	unsigned int adopted;		/* entries it holds that are ours now */
	bool *is_adopted;		/* by entry: the others are gone (the kernel freed them) */
};

int ring_mem_build(struct ring_worker *rw);
void ring_mem_free(struct ring_worker *rw);
void ring_rec_seen(struct ring_ent *ent, const void *payload, size_t len);
void ring_rec_ready(struct ring_worker *rw, struct ring_ent *ent);
void ring_rec_sent(struct ring_worker *rw);
int uring_old_map(struct ufs_uring *u, const int *fds, unsigned int n, char *why,
		  size_t why_len);
uint8_t *uring_old_pool(struct ufs_uring *u, uint16_t qid, size_t *len, bool *zero_copy);
unsigned int uring_old_max_slot(struct ufs_uring *u, const struct ring_worker *rw);
void ring_mem_pool_zero_copy(struct ring_worker *rw, const struct ring_queue *q);
unsigned int uring_adopt(struct ufs_uring *u);
void uring_kick_queues(struct ufs_uring *u, const char *mountpoint);
void uring_old_trim(struct ufs_uring *u);
void uring_old_free(struct ufs_uring *u);

#endif /* UFS_RING_KEEP_H */
