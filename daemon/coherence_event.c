// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A change on SOURCE's file system, as fanotify reports it, turned into the
 * kernel's notifications (see coherence.c for why this is coherent):
 *
 *  - a name created, removed or moved (FAN_CREATE, FAN_DELETE,
 *    FAN_MOVED_FROM, FAN_MOVED_TO; files and directories, a directory
 *    moved into or out of SOURCE too): FUSE_NOTIFY_INVAL_ENTRY on the
 *    directory and the name, which drops a positive or a negative dentry,
 *    and the directory's attributes and cached listing
 *    (FUSE_NOTIFY_INVAL_INODE, offset 0: the kernel's INVAL_ENTRY does that
 *    only when it finds the dentry); the object's attributes too (its link
 *    count, its ctime);
 *  - attributes, ACLs, extended attributes, a link count (FAN_ATTRIB,
 *    FAN_DELETE_SELF, FAN_MOVE_SELF): FUSE_NOTIFY_INVAL_INODE with offset
 *    -1 (attributes and cached ACLs);
 *  - contents (FAN_MODIFY, FAN_CLOSE_WRITE): offset 0, the cached pages
 *    too, whatever the data path.
 *
 * A file replaced by a rename over it gets its name's events and its own
 * FAN_ATTRIB (its link count).  Events of this process are the daemon's
 * own backing calls, which the kernel knows of already: dropped (the pid
 * is the thread group's, io_uring's workers included).  Events about an
 * object or directory the kernel does not hold cost a hash lookup.
 * Attribute and content invalidations are saved while nothing touched the
 * inode since the last one (inode_fid.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "coherence_event.h"
#include "coherence_state.h"
#include "fuse_abi.h"
#include "inode.h"
#include "log.h"

#define container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))
#define EV_MAX_SAME 4		/* entries one handle may have (inode_lookup.c) */
#define EV_BATCH 1024		/* node ids per pass of the invalidate-all */
#define NAME_EVENTS (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO)
#define DATA_EVENTS (FAN_MODIFY | FAN_CLOSE_WRITE)
#define COH_OVERFLOW_EPISODE_MS 60000

struct ev_fid {
	int type;
	uint32_t len;		/* 0: none */
	const unsigned char *bytes;
};

struct ev {
	uint64_t mask;
	struct ev_fid dir, obj;
	const char *name;	/* in dir, or NULL */
};

static void count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static int notify(struct ufs_coherence *c, int code, const void *payload, size_t len)
{
	int ret = c->notify(c->notify_arg, code, payload, len);

	if (!ret || ret == -ENOENT)	/* ENOENT: the kernel had nothing cached */
		count(&c->invalidations);
	else if (ret != -ENOENT && ret != -ENODEV && ret != -ENOTCONN)
		ufs_log_once(UFS_LOG_WARN, "cache: a notification to the kernel failed: %s",
			     strerror(-ret));
	return ret;
}

static void inval_inode(struct ufs_coherence *c, uint64_t nodeid, int64_t off)
{
	struct fuse_notify_inval_inode_out out = { .ino = nodeid, .off = off, .len = 0 };

	notify(c, FUSE_NOTIFY_INVAL_INODE, &out, sizeof(out));
}

static void inval_entry(struct ufs_coherence *c, uint64_t parent, const char *name)
{
	struct {
		struct fuse_notify_inval_entry_out out;
		char name[256];
	} m;
	size_t len = strnlen(name, sizeof(m.name));

	if (!len || len >= sizeof(m.name))
		return;
	m.out = (struct fuse_notify_inval_entry_out){ .parent = parent, .namelen = len };
	memcpy(m.name, name, len + 1);
	notify(c, FUSE_NOTIFY_INVAL_ENTRY, &m, sizeof(m.out) + len + 1);
}

/* Records are packed without alignment: every field by memcpy. */
static void parse(const char *ev, size_t len, const struct fanotify_event_metadata *meta,
		  struct ev *out)
{
	const size_t fh_off = offsetof(struct fanotify_event_info_fid, handle);
	const char *p = ev + meta->metadata_len, *end = ev + len;

	memset(out, 0, sizeof(*out));
	out->mask = meta->mask;
	while (p + sizeof(struct fanotify_event_info_header) <= end) {
		struct fanotify_event_info_header hdr;
		struct file_handle fh;
		struct ev_fid *f = NULL;

		memcpy(&hdr, p, sizeof(hdr));
		if (hdr.len < sizeof(hdr) || hdr.len > (size_t)(end - p))
			break;
		if (hdr.info_type == FAN_EVENT_INFO_TYPE_FID)
			f = &out->obj;
		else if (hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
			 hdr.info_type == FAN_EVENT_INFO_TYPE_DFID)
			f = &out->dir;
		if (f && hdr.len >= fh_off + sizeof(fh)) {
			memcpy(&fh, p + fh_off, sizeof(fh));
			if (fh.handle_bytes && hdr.len >= fh_off + sizeof(fh) + fh.handle_bytes) {
				f->type = fh.handle_type;
				f->len = fh.handle_bytes;
				f->bytes = (const unsigned char *)p + fh_off + sizeof(fh);
				/* DFID_NAME: a NUL-terminated name follows the handle */
				if (hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME &&
				    memchr(f->bytes + f->len, 0,
					   hdr.len - (fh_off + sizeof(fh) + fh.handle_bytes)))
					out->name = (const char *)f->bytes + f->len;
			}
		}
		p += hdr.len;
	}
	/* An event on a directory itself names it as its own directory, ".". */
	if (out->name && !strcmp(out->name, ".")) {
		if (!out->obj.len)
			out->obj = out->dir;
		out->dir.len = 0;
		out->name = NULL;
	}
}

/*
 * The node ids the kernel holds for a handle, marked with what is about to
 * be invalidated (sent: UFS_COH_SENT_*, 0 for a name's directory, which is
 * always told).  A node id whose mark covers it already is left out.
 */
static size_t held(struct ufs_coherence *c, const struct ev_fid *f, uint8_t sent,
		   uint64_t *ids)
{
	struct ufs_inode_store *inodes = c->inodes;
	struct ufs_fid_node *nodes[EV_MAX_SAME];
	struct ufs_inode *found[EV_MAX_SAME];
	size_t n, kept = 0;

	if (!f->len)
		return 0;
	pthread_mutex_lock(&inodes->inode_lock);
	if (f->type == c->root.type && f->len == c->root.len &&
	    !memcmp(f->bytes, c->root.bytes, f->len) && inodes->root) {
		found[0] = inodes->root;
		n = 1;
	} else {
		n = ufs_fids_find(&inodes->fids, f->type, f->bytes, f->len, nodes, EV_MAX_SAME);
		for (size_t i = 0; i < n; i++)
			found[i] = container_of(nodes[i], struct ufs_inode, fid);
	}
	for (size_t i = 0; i < n; i++) {
		if (sent && (found[i]->coh_sent & sent) == sent) {
			count(&c->coalesced);
			continue;
		}
		found[i]->coh_sent |= sent;
		ids[kept++] = found[i]->nodeid;
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	if (!n)
		count(&c->ignored);
	return kept;
}

/* Returns how many node ids were told. */
static size_t inode_changed(struct ufs_coherence *c, const struct ev_fid *f, bool data)
{
	uint8_t sent = data ? UFS_COH_SENT_ATTR | UFS_COH_SENT_DATA : UFS_COH_SENT_ATTR;
	uint64_t ids[EV_MAX_SAME];
	size_t n = held(c, f, sent, ids);

	for (size_t i = 0; i < n; i++)
		inval_inode(c, ids[i], data ? 0 : -1);
	return n;
}

/*
 * With writeback_cache the kernel never takes a regular file's size or
 * times from the daemon while it holds the inode (fs/fuse/inode.c:
 * fuse_change_attributes, fuse_get_cache_mask), so a file written beside
 * the mount would keep its old size for as long as its name stays cached.
 * Dropping the name lets the kernel evict the inode when nothing has it
 * open; the next lookup makes a new one with the size SOURCE has.  An
 * inode held open keeps its size: a residual (kernels.md).
 */
static void drop_name(struct ufs_coherence *c, const struct ev *e)
{
	uint64_t ids[EV_MAX_SAME];
	size_t n = held(c, &e->dir, 0, ids);

	for (size_t i = 0; i < n; i++)
		inval_entry(c, ids[i], e->name);
}

static void act(struct ufs_coherence *c, const struct ev *e)
{
	uint64_t ids[EV_MAX_SAME];
	size_t n;

	if (!(e->mask & NAME_EVENTS)) {
		if (inode_changed(c, &e->obj, e->mask & DATA_EVENTS) && c->writeback &&
		    (e->mask & DATA_EVENTS) && e->name)
			drop_name(c, e);
		return;
	}
	if (e->name) {
		n = held(c, &e->dir, 0, ids);
		for (size_t i = 0; i < n; i++)
			inval_entry(c, ids[i], e->name);
		/* Its attributes and listing, even where no dentry was found. */
		inode_changed(c, &e->dir, true);
	}
	/*
	 * The object: its link count and ctime; a directory moved also loses
	 * its kept listing, which a move out of SOURCE must not leave
	 * readable (fs_dir.c: the next listing asks the daemon, which checks).
	 */
	if (e->obj.len)
		inode_changed(c, &e->obj, e->mask & FAN_ONDIR);
}

/* Lost events (or one not understood): everything, once per batch. */
static void overflowed(struct ufs_coherence *c, bool *all)
{
	count(&c->overflows);
	*all = true;
}

int ufs_coherence_drain(struct ufs_coherence *c, char *buf, size_t size)
{
	bool all = false, any_overflow = false;

	for (;;) {
		ssize_t n = read(c->fan_fd, buf, size);
		struct fanotify_event_metadata meta;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		for (size_t off = 0; off + sizeof(meta) <= (size_t)n; off += meta.event_len) {
			struct ev e;

			memcpy(&meta, buf + off, sizeof(meta));
			if (meta.event_len < sizeof(meta) || meta.event_len > (size_t)n - off ||
			    meta.vers != FANOTIFY_METADATA_VERSION) {
				overflowed(c, &all);
				break;
			}
			count(&c->events);
			if (meta.mask & FAN_Q_OVERFLOW) {
				overflowed(c, &all);
				any_overflow = true;
				continue;
			}
			if (meta.pid == c->self) {
				count(&c->echoes);
				continue;
			}
			if (all)
				continue;	/* everything goes anyway */
			parse(buf + off, meta.event_len, &meta, &e);
			act(c, &e);
		}
	}
	if (all) {
		/* One line per episode: overflows within a minute of the last line are its. */
		struct timespec now;
		uint64_t ms;
		bool say;

		clock_gettime(CLOCK_MONOTONIC, &now);
		ms = (uint64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
		say = !c->overflow_logged_ms || ms - c->overflow_logged_ms >= COH_OVERFLOW_EPISODE_MS;
		if (say)
			c->overflow_logged_ms = ms;
		ufs_coherence_invalidate_all(c, !say ? NULL :
					     any_overflow ? "fanotify lost events (queue overflow)" :
							    "an fanotify record not understood");
	}
	return 0;
}

void ufs_coherence_invalidate_all(struct ufs_coherence *c, const char *why)
{
	struct ufs_inode_store *inodes = c->inodes;
	static struct ufs_fid_node *nodes[EV_BATCH];	/* the watcher thread's only */
	static uint64_t ids[EV_BATCH];
	size_t cursor = 0, n, total = 0;

	/* Every cached name (positive or negative) fails its next revalidation. */
	notify(c, FUSE_NOTIFY_INC_EPOCH, NULL, 0);
	inval_inode(c, FUSE_ROOT_ID, 0);
	do {
		pthread_mutex_lock(&inodes->inode_lock);
		n = ufs_fids_walk(&inodes->fids, &cursor, nodes, EV_BATCH);
		for (size_t i = 0; i < n; i++) {
			struct ufs_inode *inode = container_of(nodes[i], struct ufs_inode, fid);

			inode->coh_sent = UFS_COH_SENT_ATTR | UFS_COH_SENT_DATA;
			ids[i] = inode->nodeid;
		}
		pthread_mutex_unlock(&inodes->inode_lock);
		for (size_t i = 0; i < n; i++)
			inval_inode(c, ids[i], 0);
		total += n;
	} while (n);
	if (why)
		ufs_warn("cache: %s: every cached name, attribute and page invalidated (%zu inodes)",
			 why, total + 1);
}
