// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The hand-over record (record.h): a sparse memory file of fixed-size
 * records, mapped once, written by the daemon as it serves and read by
 * whoever takes the connection over.
 *
 * Layout: the header, then UFS_RECORD_NODES node records, then
 * UFS_RECORD_FILES file records, each array page-aligned.  Capacities and
 * offsets are in the header, so a reader never trusts its own constants.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record.h"

#define PAGE_ALIGN(x) (((x) + 4095) & ~(size_t)4095)

/* Every writer takes NULL or a record that keeps nothing, and does nothing. */
static bool kept(const struct ufs_record *r)
{
	return r && r->hdr;
}

static size_t layout(size_t *nodes_off, size_t *files_off)
{
	*nodes_off = PAGE_ALIGN(sizeof(struct ufs_record_header));
	*files_off = PAGE_ALIGN(*nodes_off + (size_t)UFS_RECORD_NODES *
						     sizeof(struct ufs_record_node));
	return PAGE_ALIGN(*files_off + (size_t)UFS_RECORD_FILES * sizeof(struct ufs_record_file));
}

static int map_file(struct ufs_record *r, int fd, size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	r->fd = fd;
	r->hdr = p;
	r->map_len = size;
	r->nodes = (void *)((char *)p + r->hdr->nodes_off);
	r->files = (void *)((char *)p + r->hdr->files_off);
	return 0;
}

int ufs_record_create(struct ufs_record *r, const char *source, const char *mountpoint,
		      const char *options, const char *settings)
{
	struct ufs_record_header h = { 0 };
	size_t nodes_off, files_off, size = layout(&nodes_off, &files_off);
	int fd, ret;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (strlen(source) >= sizeof(h.source) || strlen(mountpoint) >= sizeof(h.mountpoint) ||
	    strlen(options) >= sizeof(h.options) || strlen(settings) >= sizeof(h.settings))
		return -ENAMETOOLONG;
	fd = memfd_create("uringfs-record", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, size)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	h.magic = UFS_RECORD_MAGIC;
	h.version = UFS_RECORD_VERSION;
	h.header_size = sizeof(h);
	h.nodes_off = nodes_off;
	h.files_off = files_off;
	h.size = size;
	h.nodes_cap = UFS_RECORD_NODES;
	h.files_cap = UFS_RECORD_FILES;
	strcpy(h.source, source);
	strcpy(h.mountpoint, mountpoint);
	strcpy(h.options, options);
	strcpy(h.settings, settings);
	h.owner_pid = getpid();
	if (pwrite(fd, &h, sizeof(h), 0) != sizeof(h)) {
		ret = errno ? -errno : -EIO;
		close(fd);
		return ret;
	}
	ret = map_file(r, fd, size);
	if (ret)
		close(fd);
	return ret;
}

static int refuse(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* The header as read from the file, before anything of it is used. */
static int header_check(const struct ufs_record_header *h, size_t file_size, char *why, size_t len)
{
	size_t nodes_end, files_end;

	if (h->magic != UFS_RECORD_MAGIC)
		return refuse(why, len, "not a uringfs hand-over record");
	if (h->version != UFS_RECORD_VERSION || h->header_size != sizeof(*h))
		return refuse(why, len, "record version %u (header %u bytes), this build reads %u (%zu)",
			      h->version, h->header_size, UFS_RECORD_VERSION, sizeof(*h));
	if (h->nodes_off > file_size || h->files_off > file_size ||
	    h->nodes_cap > UFS_RECORD_NODES || h->files_cap > UFS_RECORD_FILES)
		return refuse(why, len, "record layout is inconsistent (size %zu)", file_size);
	nodes_end = h->nodes_off + (size_t)h->nodes_cap * sizeof(struct ufs_record_node);
	files_end = h->files_off + (size_t)h->files_cap * sizeof(struct ufs_record_file);
	if (h->size != file_size || h->nodes_off < sizeof(*h) || h->nodes_off % 4096 ||
	    h->files_off < nodes_end || h->files_off % 4096 || files_end > file_size ||
	    h->nodes_hwm > h->nodes_cap || h->files_hwm > h->files_cap)
		return refuse(why, len, "record layout is inconsistent (size %zu)", file_size);
	if (!memchr(h->source, 0, sizeof(h->source)) ||
	    !memchr(h->mountpoint, 0, sizeof(h->mountpoint)) ||
	    !memchr(h->options, 0, sizeof(h->options)) ||
	    !memchr(h->settings, 0, sizeof(h->settings)) || h->init_in_len > sizeof(h->init_in) ||
	    h->init_out_len > sizeof(h->init_out))
		return refuse(why, len, "record header is corrupt");
	if (!h->init_out_len)
		return refuse(why, len, "record has no INIT: the connection never served");
	if (h->incomplete)
		return refuse(why, len, "record is incomplete: more node ids than it can hold");
	return 0;
}

/* A node slot is free again; -ENOMEM leaves it unused for good. */
static int node_slot_put(struct ufs_record *r, uint32_t slot)
{
	if (r->node_free_n == r->node_free_cap) {
		uint32_t cap = r->node_free_cap ? r->node_free_cap * 2 : 1024;
		uint32_t *p = realloc(r->node_free, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->node_free = p;
		r->node_free_cap = cap;
	}
	r->node_free[r->node_free_n++] = slot;
	return 0;
}

static int free_slots_find(struct ufs_record *r)
{
	for (uint32_t i = r->hdr->nodes_hwm; i-- > 0;) {
		if (!__atomic_load_n(&r->nodes[i].nodeid, __ATOMIC_ACQUIRE) && node_slot_put(r, i))
			return -ENOMEM;
	}
	return 0;
}

int ufs_record_attach(struct ufs_record *r, int fd, char *why, size_t why_len)
{
	struct ufs_record_header h;
	struct stat st;
	int ret;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	if (fstat(fd, &st))
		return -errno;
	if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		return refuse(why, why_len, "record is too short (%lld bytes)",
			      (long long)st.st_size);
	ret = header_check(&h, st.st_size, why, why_len);
	if (ret)
		return ret;
	ret = map_file(r, fd, st.st_size);
	if (!ret)
		ret = free_slots_find(r);
	if (ret) {
		snprintf(why, why_len, "%s", strerror(-ret));
		ufs_record_close(r);
		return ret;
	}
	r->hdr->owner_pid = getpid();
	return 0;
}

void ufs_record_close(struct ufs_record *r)
{
	if (r->hdr)
		munmap(r->hdr, r->map_len);
	if (r->fd >= 0)
		close(r->fd);
	free(r->node_free);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

void ufs_record_set_init(struct ufs_record *r, const void *in, size_t in_len, const void *out,
			 size_t out_len, unsigned int conn_id)
{
	struct ufs_record_header *h;

	if (!kept(r))
		return;
	h = r->hdr;
	in_len = in_len < sizeof(h->init_in) ? in_len : sizeof(h->init_in);
	out_len = out_len < sizeof(h->init_out) ? out_len : sizeof(h->init_out);
	memcpy(h->init_in, in, in_len);
	memcpy(h->init_out, out, out_len);
	h->init_in_len = in_len;
	h->conn_id = conn_id;
	/* Last: a record with an INIT reply is one a successor may use. */
	__atomic_store_n(&h->init_out_len, out_len, __ATOMIC_RELEASE);
}

void ufs_record_set_settings(struct ufs_record *r, const char *settings)
{
	if (kept(r) && strlen(settings) < sizeof(r->hdr->settings))
		strcpy(r->hdr->settings, settings);
}

/* ---- nodes ---- */

static bool node_slot_get(struct ufs_record *r, uint32_t *slot)
{
	if (r->node_free_n) {
		*slot = r->node_free[--r->node_free_n];
		return true;
	}
	if (r->hdr->nodes_hwm == r->hdr->nodes_cap)
		return false;
	*slot = r->hdr->nodes_hwm;
	__atomic_store_n(&r->hdr->nodes_hwm, *slot + 1, __ATOMIC_RELEASE);
	return true;
}

uint32_t ufs_record_node_add(struct ufs_record *r, uint64_t nodeid, uint64_t nlookup, dev_t dev,
			     ino_t ino, mode_t type, int mount_id, int handle_type,
			     const void *handle, unsigned int handle_bytes)
{
	struct ufs_record_node *n;
	uint32_t slot;

	if (!kept(r))
		return 0;
	if (handle_bytes > UFS_RECORD_HANDLE_MAX || !node_slot_get(r, &slot)) {
		__atomic_store_n(&r->hdr->incomplete, 1, __ATOMIC_RELEASE);
		return 0;
	}
	n = &r->nodes[slot];
	n->nlookup = nlookup;
	n->dev = dev;
	n->ino = ino;
	n->type = type & S_IFMT;
	n->flags = 0;
	n->mount_id = mount_id;
	n->handle_type = handle_type;
	n->handle_bytes = handle_bytes;
	memcpy(n->handle, handle, handle_bytes);
	__atomic_store_n(&n->nodeid, nodeid, __ATOMIC_RELEASE);
	return slot + 1;
}

void ufs_record_node_lookups(struct ufs_record *r, uint32_t slot, uint64_t nlookup)
{
	if (kept(r) && slot)
		__atomic_store_n(&r->nodes[slot - 1].nlookup, nlookup, __ATOMIC_RELEASE);
}

void ufs_record_node_set_flags(struct ufs_record *r, uint32_t slot, uint32_t flags)
{
	if (kept(r) && slot)
		__atomic_store_n(&r->nodes[slot - 1].flags, flags, __ATOMIC_RELEASE);
}

/*
 * Where a name last led to a live node: a successor looks a restored file
 * up there when its handle opens a disconnected dentry (inode_reopen).
 */
void ufs_record_node_parent(struct ufs_record *r, uint32_t slot, uint64_t parent)
{
	if (kept(r) && slot)
		__atomic_store_n(&r->nodes[slot - 1].parent, parent, __ATOMIC_RELAXED);
}

/* Forgotten by the kernel: the parent first, which a reader of the flag may trust. */
void ufs_record_node_exported(struct ufs_record *r, uint32_t slot, uint64_t parent)
{
	if (!kept(r) || !slot)
		return;
	__atomic_store_n(&r->nodes[slot - 1].parent, parent, __ATOMIC_RELAXED);
	ufs_record_node_set_flags(r, slot, UFS_RECORD_NODE_EXPORTED);
}

void ufs_record_node_drop(struct ufs_record *r, uint32_t slot)
{
	if (!kept(r) || !slot)
		return;
	__atomic_store_n(&r->nodes[slot - 1].nodeid, 0, __ATOMIC_RELEASE);
	node_slot_put(r, slot - 1);
}

void ufs_record_next_nodeid(struct ufs_record *r, uint64_t next)
{
	if (kept(r))
		__atomic_store_n(&r->hdr->next_nodeid, next, __ATOMIC_RELEASE);
}

/* ---- files ---- */

void ufs_record_file_set(struct ufs_record *r, uint32_t index, uint32_t gen, uint64_t nodeid,
			 int flags, enum ufs_record_file_kind kind, unsigned int io_mode,
			 int backing_id, uint32_t charged_uid)
{
	struct ufs_record_file *f;

	if (!kept(r))
		return;
	if (index >= r->hdr->files_cap) {
		__atomic_store_n(&r->hdr->incomplete, 1, __ATOMIC_RELEASE);
		return;
	}
	f = &r->files[index];
	__atomic_store_n(&f->nodeid, 0, __ATOMIC_RELEASE);
	f->gen = gen;
	f->flags = flags;
	f->backing_id = backing_id;
	f->kind = kind;
	f->io_mode = io_mode;
	f->charged_uid = charged_uid;
	if (index >= r->hdr->files_hwm)
		__atomic_store_n(&r->hdr->files_hwm, index + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&f->nodeid, nodeid, __ATOMIC_RELEASE);
}

void ufs_record_file_drop(struct ufs_record *r, uint32_t index)
{
	if (kept(r) && index < r->hdr->files_cap)
		__atomic_store_n(&r->files[index].nodeid, 0, __ATOMIC_RELEASE);
}
