// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The inode store's index by file handle, for the coherence watcher
 * (coherence_event.c): fanotify reports a change by the file handle of the
 * object and of its directory, as name_to_handle_at spells it (the same
 * encoding on the file systems the watcher accepts).  Every inode with a
 * handle is in it from its insertion to its release (inode.c); an inode
 * without one is not (SOURCE's root is known to the watcher itself, and
 * other mounts' files are not watched).  Called under the store's
 * inode_lock.
 */
#include <stdlib.h>
#include <string.h>

#include "inode_fid.h"

#define FID_MIN_BUCKETS 1024

uint32_t ufs_fid_hash(int type, const unsigned char *bytes, uint32_t len)
{
	uint32_t h = 2166136261u ^ (uint32_t)type;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ bytes[i]) * 16777619u;
	return h;
}

static size_t node_bucket(const struct ufs_fid_node *node, size_t nbuckets)
{
	return ufs_fid_hash(node->handle->handle_type, node->handle->f_handle,
			    node->handle->handle_bytes) & (nbuckets - 1);
}

void ufs_fids_destroy(struct ufs_inode_fids *fids)
{
	free(fids->buckets);
	memset(fids, 0, sizeof(*fids));
}

/* Double the table when full; a failed allocation keeps chains longer. */
static void fids_grow(struct ufs_inode_fids *fids)
{
	size_t n = fids->nbuckets ? fids->nbuckets * 2 : FID_MIN_BUCKETS;
	struct ufs_fid_node **b = calloc(n, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < fids->nbuckets; i++) {
		struct ufs_fid_node *node = fids->buckets[i];

		while (node) {
			struct ufs_fid_node *next = node->next;
			size_t k = node_bucket(node, n);

			node->next = b[k];
			b[k] = node;
			node = next;
		}
	}
	free(fids->buckets);
	fids->buckets = b;
	fids->nbuckets = n;
}

void ufs_fids_add(struct ufs_inode_fids *fids, struct ufs_fid_node *node,
		  const struct file_handle *handle)
{
	size_t k;

	if (!handle || node->handle)
		return;
	if (fids->count >= fids->nbuckets)
		fids_grow(fids);
	if (!fids->nbuckets)
		return;	/* out of memory: the watcher cannot find it (coherence_event.c) */
	node->handle = handle;
	k = node_bucket(node, fids->nbuckets);
	node->next = fids->buckets[k];
	fids->buckets[k] = node;
	fids->count++;
}

void ufs_fids_del(struct ufs_inode_fids *fids, struct ufs_fid_node *node)
{
	struct ufs_fid_node **pp;

	if (!node->handle)
		return;
	for (pp = &fids->buckets[node_bucket(node, fids->nbuckets)]; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			break;
		}
	}
	node->handle = NULL;
	fids->count--;
}

size_t ufs_fids_find(const struct ufs_inode_fids *fids, int type, const unsigned char *bytes,
		     uint32_t len, struct ufs_fid_node **out, size_t max)
{
	struct ufs_fid_node *node;
	size_t n = 0;

	if (!fids->nbuckets)
		return 0;
	node = fids->buckets[ufs_fid_hash(type, bytes, len) & (fids->nbuckets - 1)];
	for (; node && n < max; node = node->next) {
		const struct file_handle *h = node->handle;

		if (h->handle_type == type && h->handle_bytes == len &&
		    !memcmp(h->f_handle, bytes, len))
			out[n++] = node;
	}
	return n;
}

size_t ufs_fids_walk(const struct ufs_inode_fids *fids, size_t *cursor, struct ufs_fid_node **out,
		     size_t max)
{
	size_t n = 0;

	for (; *cursor < fids->nbuckets; ++*cursor) {
		size_t in_bucket = 0;
		struct ufs_fid_node *node;

		for (node = fids->buckets[*cursor]; node; node = node->next)
			in_bucket++;
		if (n + in_bucket > max)
			break;	/* whole buckets only (max is far above a chain's length) */
		for (node = fids->buckets[*cursor]; node; node = node->next)
			out[n++] = node;
	}
	return n;
}
