// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The export store (store.h): SOURCE's node ids on disk.
 *
 * DIR must be the daemon's own and writable by nobody else; the file is
 * opened without following symlinks and must be a regular file of the
 * daemon's, mode 0600, with one link.  Its header names SOURCE (the root's
 * file handle, inode number and file system type: the same after a reboot
 * on a persistent file system) and every record carries a checksum seeded
 * with that identity, so a record copied from another SOURCE's store fails
 * too.  A header that fails is the whole store refused; a record that fails
 * is that record ignored (a write torn by a power cut looks the same).
 *
 * At open the store is read, its newest records kept (one per node id, at
 * most capacity) and written again, compacted, under a new generation, to
 * a new file renamed over the old one and synced: a crash leaves the old
 * store or the new one, never half of either, and the generation is on
 * disk before this daemon hands out a node id.  Records written while
 * serving are not synced one by one: a power cut may lose the newest,
 * whose handles then answer ESTALE.  One daemon at a time uses a store
 * (store_lock.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "store_lock.h"

#define STORE_MAGIC "UFSXSTOR"
#define STORE_VERSION 1u
#define STORE_HDR_SIZE 256
#define STORE_MAX_RECORDS (1u << 26)	/* export_inodes' maximum */
#define REC_ROOT_DEV 1u			/* on SOURCE's st_dev, whatever it is after a reboot */

struct store_hdr {
	char magic[8];
	uint32_t version;
	uint32_t rec_size;
	uint64_t ident;
	uint64_t generation;
	uint64_t root_ino;
	uint64_t fs_type;
	int32_t root_handle_type;
	uint32_t root_handle_bytes;
	uint8_t root_handle[UFS_RECORD_HANDLE_MAX];
	uint64_t csum;			/* of everything above */
};

struct store_rec {
	uint64_t seq;			/* 0: an empty slot */
	uint64_t nodeid;
	uint64_t parent;
	uint64_t dev;			/* 0 with REC_ROOT_DEV */
	uint64_t ino;
	uint32_t type;
	uint32_t flags;
	int32_t handle_type;
	uint32_t handle_bytes;
	uint8_t handle[UFS_RECORD_HANDLE_MAX];
	uint64_t csum;			/* of everything above, seeded with the identity */
};

_Static_assert(sizeof(struct store_hdr) <= STORE_HDR_SIZE, "store header too large");

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		h ^= c[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static uint64_t rec_csum(uint64_t ident, const struct store_rec *r)
{
	return fnv(fnv(FNV_BASIS, &ident, sizeof(ident)), r, offsetof(struct store_rec, csum));
}

void ufs_store_init(struct ufs_store *s)
{
	memset(s, 0, sizeof(*s));
	s->dir_fd = s->fd = s->lock_fd = -1;
}

uint64_t ufs_store_random_generation(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	v &= UFS_STORE_GEN_MASK;
	return v ? v : 1;
}

/* SOURCE's identity: its root's handle, inode number and file system type. */
static int identify(struct store_hdr *h, int root_fd, dev_t *root_dev, int *mount_id)
{
	struct {
		struct file_handle fh;
		unsigned char buf[UFS_RECORD_HANDLE_MAX];
	} u;
	struct statfs sfs;
	struct stat st;

	u.fh.handle_bytes = UFS_RECORD_HANDLE_MAX;
	if (fstat(root_fd, &st) || fstatfs(root_fd, &sfs) ||
	    name_to_handle_at(root_fd, "", &u.fh, mount_id, AT_EMPTY_PATH))
		return -errno;
	memcpy(h->magic, STORE_MAGIC, sizeof(h->magic));
	h->version = STORE_VERSION;
	h->rec_size = sizeof(struct store_rec);
	h->root_ino = st.st_ino;
	h->fs_type = (uint64_t)sfs.f_type;
	h->root_handle_type = u.fh.handle_type;
	h->root_handle_bytes = u.fh.handle_bytes;
	memcpy(h->root_handle, u.fh.f_handle, u.fh.handle_bytes);
	h->ident = fnv(FNV_BASIS, &h->root_ino,
		       offsetof(struct store_hdr, csum) - offsetof(struct store_hdr, root_ino));
	*root_dev = st.st_dev;
	return 0;
}

static int dir_open(const char *dir, char *why, size_t len)
{
	struct stat st;
	int fd;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0700) && errno != EEXIST)
			goto err;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		goto err;
	if (fstat(fd, &st))
		goto err;
	if (st.st_uid != geteuid()) {
		snprintf(why, len, "%s is owned by uid %u, not the daemon's (%u)", dir,
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
	} else if (st.st_mode & 022) {
		snprintf(why, len, "%s has mode %04o: others could replace the store (use 0700)",
			 dir, (unsigned int)(st.st_mode & 07777));
	} else {
		return fd;
	}
	close(fd);
	return -EPERM;
err:
	snprintf(why, len, "%s: %s", dir, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -errno;
}

static int by_nodeid_seq(const void *a, const void *b)
{
	const struct store_rec *x = a, *y = b;

	if (x->nodeid != y->nodeid)
		return x->nodeid < y->nodeid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_seq(const void *a, const void *b)
{
	const struct store_rec *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool rec_valid(const struct store_rec *r, uint64_t ident)
{
	mode_t t = r->type;

	return r->csum == rec_csum(ident, r) && r->nodeid > 1 &&
	       (r->nodeid >> UFS_STORE_GEN_SHIFT) && r->handle_bytes &&
	       r->handle_bytes <= UFS_RECORD_HANDLE_MAX && t == (t & S_IFMT) &&
	       (S_ISREG(t) || S_ISDIR(t) || S_ISLNK(t) || S_ISFIFO(t) || S_ISSOCK(t) ||
		S_ISCHR(t) || S_ISBLK(t));
}

/*
 * The records of a store whose header matched, newest last, one per node
 * id, at most s->capacity.  Returns the count, or -ENOMEM.
 */
static ssize_t read_records(struct ufs_store *s, int fd, off_t size, struct store_rec **out)
{
	size_t n = size > STORE_HDR_SIZE ? (size_t)(size - STORE_HDR_SIZE) / sizeof(**out) : 0;
	struct store_rec *recs;
	size_t got = 0, keep = 0;

	if (n > STORE_MAX_RECORDS)
		n = STORE_MAX_RECORDS;
	recs = malloc((n ? n : 1) * sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct store_rec *r = &recs[got];

		if (pread(fd, r, sizeof(*r), STORE_HDR_SIZE + (off_t)i * sizeof(*r)) != sizeof(*r))
			break;
		if (!r->seq)
			continue;
		if (rec_valid(r, s->ident))
			got++;
		else
			s->nrefused++;
	}
	/* The newest record of each node id. */
	qsort(recs, got, sizeof(*recs), by_nodeid_seq);
	for (size_t i = 0; i < got; i++) {
		if (i + 1 < got && recs[i + 1].nodeid == recs[i].nodeid)
			continue;
		recs[keep++] = recs[i];
	}
	qsort(recs, keep, sizeof(*recs), by_seq);
	if (keep > s->capacity) {
		memmove(recs, recs + (keep - s->capacity), s->capacity * sizeof(*recs));
		keep = s->capacity;
	}
	*out = recs;
	return keep;
}

/*
 * The old store, checked.  Returns the number of records in *out (0 and
 * *gen 0 without a store), or -1 with why set: refused.
 */
static ssize_t load(struct ufs_store *s, const struct store_hdr *want, uint64_t *gen,
		    struct store_rec **out, char *why, size_t len)
{
	struct store_hdr h;
	struct stat st;
	ssize_t n = -1;
	int fd;

	*gen = 0;
	*out = NULL;
	fd = openat(s->dir_fd, s->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, len, "%s", errno == ELOOP ? "it is a symbolic link" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st))
		snprintf(why, len, "%s", strerror(errno));
	else if (!S_ISREG(st.st_mode))
		snprintf(why, len, "not a regular file");
	else if (st.st_uid != geteuid())
		snprintf(why, len, "owned by uid %u, not the daemon's", (unsigned int)st.st_uid);
	else if (st.st_mode & 077)
		snprintf(why, len, "mode %04o, not 0600", (unsigned int)(st.st_mode & 07777));
	else if (st.st_nlink != 1)
		snprintf(why, len, "%u links, not 1", (unsigned int)st.st_nlink);
	else if (pread(fd, &h, sizeof(h), 0) != sizeof(h))
		snprintf(why, len, "its header is truncated");
	else if (memcmp(h.magic, STORE_MAGIC, sizeof(h.magic)))
		snprintf(why, len, "not an export store (bad magic)");
	else if (h.version != STORE_VERSION || h.rec_size != sizeof(struct store_rec))
		snprintf(why, len, "version %u, record size %u: not this daemon's (%u, %zu)",
			 h.version, h.rec_size, STORE_VERSION, sizeof(struct store_rec));
	else if (h.csum != fnv(FNV_BASIS, &h, offsetof(struct store_hdr, csum)))
		snprintf(why, len, "its header fails its checksum");
	else if (memcmp(&h.ident, &want->ident, sizeof(h.ident)) || h.root_ino != want->root_ino ||
		 h.fs_type != want->fs_type || h.root_handle_type != want->root_handle_type ||
		 h.root_handle_bytes != want->root_handle_bytes ||
		 memcmp(h.root_handle, want->root_handle, want->root_handle_bytes))
		snprintf(why, len, "it belongs to another SOURCE");
	else
		n = read_records(s, fd, st.st_size, out);
	if (n == -ENOMEM) {
		snprintf(why, len, "out of memory");
		n = -1;
	}
	if (n >= 0)
		*gen = h.generation & UFS_STORE_GEN_MASK;
	close(fd);
	return n;
}

/* The compacted store under the new generation: a new file, synced, renamed over the old. */
static int rewrite(struct ufs_store *s, struct store_hdr *h, struct store_rec *recs, size_t n)
{
	char tmp[sizeof(s->name) + 8];
	unsigned char hbuf[STORE_HDR_SIZE] = { 0 };
	ssize_t len = (ssize_t)(n * sizeof(*recs));
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.new", s->name);
	unlinkat(s->dir_fd, tmp, 0);
	fd = openat(s->dir_fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	h->generation = s->generation;
	h->csum = fnv(FNV_BASIS, h, offsetof(struct store_hdr, csum));
	memcpy(hbuf, h, sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		recs[i].seq = i + 1;
		recs[i].csum = rec_csum(s->ident, &recs[i]);
	}
	if (fchmod(fd, 0600) || pwrite(fd, hbuf, sizeof(hbuf), 0) != sizeof(hbuf) ||
	    (n && pwrite(fd, recs, len, STORE_HDR_SIZE) != len) ||
	    fsync(fd) || renameat(s->dir_fd, tmp, s->dir_fd, s->name) || fsync(s->dir_fd)) {
		int e = errno ? errno : EIO;

		close(fd);
		unlinkat(s->dir_fd, tmp, 0);
		return -e;
	}
	s->fd = fd;
	s->seq = n + 1;
	return 0;
}

static void keep_loaded(struct ufs_store *s, const struct store_rec *recs, size_t n)
{
	size_t k = 0;

	s->loaded = calloc(n ? n : 1, sizeof(*s->loaded));
	if (!s->loaded)
		return;
	for (size_t i = 0; i < n; i++) {
		struct ufs_record_node *o = &s->loaded[k];
		const struct store_rec *r = &recs[i];

		/* This daemon's own node ids are new ones: no record may claim them. */
		if ((r->nodeid >> UFS_STORE_GEN_SHIFT) == s->generation)
			continue;
		k++;

		o->nodeid = r->nodeid;
		o->dev = r->flags & REC_ROOT_DEV ? (uint64_t)s->root_dev : r->dev;
		o->ino = r->ino;
		o->parent = r->parent;
		o->type = r->type;
		o->flags = UFS_RECORD_NODE_EXPORTED;
		o->mount_id = s->root_mount_id;
		o->handle_type = r->handle_type;
		o->handle_bytes = r->handle_bytes;
		memcpy(o->handle, r->handle, r->handle_bytes);
	}
	s->nloaded = k;
}

int ufs_store_open(struct ufs_store *s, const char *dir, int root_fd, uint32_t capacity,
		   char *why, size_t why_len)
{
	struct store_rec *recs = NULL;
	struct store_hdr h = { 0 };
	char refused[256];
	uint64_t gen;
	ssize_t n;
	int ret;

	ufs_store_init(s);
	s->capacity = capacity;
	ret = identify(&h, root_fd, &s->root_dev, &s->root_mount_id);
	if (ret) {
		snprintf(why, why_len, "SOURCE gives no file handle for its root: %s",
			 strerror(-ret));
		return ret;
	}
	s->ident = h.ident;
	snprintf(s->name, sizeof(s->name), "uringfs-%016llx.export",
		 (unsigned long long)s->ident);
	s->dir_fd = dir_open(dir, why, why_len);
	if (s->dir_fd < 0) {
		ret = s->dir_fd;
		s->dir_fd = -1;
		return ret;
	}
	ufs_store_check_parents(dir);
	/* Before it is read: see store_lock.c. */
	ret = ufs_store_lock(s, dir, why, why_len);
	if (ret) {
		close(s->dir_fd);
		s->dir_fd = -1;
		return ret;
	}
	n = load(s, &h, &gen, &recs, refused, sizeof(refused));
	if (n < 0) {
		ufs_warn("export store %s/%s refused: %s; starting a new one (older file "
			 "handles are stale)", dir, s->name, refused);
		n = 0;
		gen = 0;
	} else if (s->nrefused) {
		ufs_warn("export store %s/%s: %zu records fail their checks and are ignored "
			 "(their file handles are stale)", dir, s->name, s->nrefused);
	}
	s->generation = gen ? (gen + 1) & UFS_STORE_GEN_MASK : ufs_store_random_generation();
	if (!s->generation)
		s->generation = 1;
	ret = rewrite(s, &h, recs, (size_t)n);
	if (ret) {
		snprintf(why, why_len, "writing %s/%s: %s", dir, s->name, strerror(-ret));
		free(recs);
		ufs_store_close(s);
		return ret;
	}
	keep_loaded(s, recs, (size_t)n);
	free(recs);
	return 0;
}

void ufs_store_loaded_free(struct ufs_store *s)
{
	free(s->loaded);
	s->loaded = NULL;
	s->nloaded = 0;
}

void ufs_store_note(struct ufs_store *s, uint64_t nodeid, dev_t dev, ino_t ino, mode_t type,
		    uint64_t parent, int mount_id, int handle_type, const void *handle,
		    unsigned int handle_bytes)
{
	struct store_rec r = { 0 };
	off_t off;

	if (!s || s->fd < 0 || s->failed || mount_id != s->root_mount_id || !handle_bytes ||
	    handle_bytes > UFS_RECORD_HANDLE_MAX || !s->capacity)
		return;
	r.seq = s->seq++;
	r.nodeid = nodeid;
	r.parent = parent;
	if (dev == s->root_dev)
		r.flags = REC_ROOT_DEV;
	else
		r.dev = dev;
	r.ino = ino;
	r.type = type & S_IFMT;
	r.handle_type = handle_type;
	r.handle_bytes = handle_bytes;
	memcpy(r.handle, handle, handle_bytes);
	r.csum = rec_csum(s->ident, &r);
	off = STORE_HDR_SIZE + (off_t)((r.seq - 1) % s->capacity) * (off_t)sizeof(r);
	if (pwrite(s->fd, &r, sizeof(r), off) != sizeof(r)) {
		s->failed = true;
		ufs_err("export store %s: writing a record: %s; no more records are kept, so "
			"handles of newer files will not outlive this daemon",
			s->name, strerror(errno ? errno : EIO));
	}
}

void ufs_store_close(struct ufs_store *s)
{
	if (!s)
		return;
	if (s->fd >= 0) {
		fdatasync(s->fd);
		close(s->fd);
	}
	if (s->dir_fd >= 0)
		close(s->dir_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);	/* the lock goes with its last descriptor */
	ufs_store_loaded_free(s);
	s->fd = s->dir_fd = s->lock_fd = -1;
}
