// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * "Still inside SOURCE" for directories too deep for /proc/self/fd's
 * readlink (confine.c), in O(1) system calls amortized whatever the depth.
 *
 * The memory: a set of file handles of directories known to be inside
 * SOURCE, closed upwards (with every directory, all its ancestors up to
 * SOURCE's root are in the set; SOURCE's root always is).  A check of a
 * deep directory looks its handle up; only a miss walks ".." up to the
 * first remembered ancestor, and remembers the walked chain.
 *
 * What can take a directory out of SOURCE is a move of it or of one of its
 * ancestors, and that moved directory is then remembered too (the set is
 * closed upwards), as is its old parent.  A fanotify group watches the
 * whole backing file system (FAN_MARK_FILESYSTEM) for directory moves
 * (FAN_MOVED_FROM | FAN_ONDIR, with FAN_REPORT_DFID_NAME_TARGET: the old
 * parent's handle, the name and the moved directory's handle; before 5.17
 * FAN_REPORT_DFID_NAME, without the last).  A move of a remembered
 * directory (without its handle: a move out of a remembered directory), or
 * a lost event (queue overflow), forgets the whole set; any other move
 * (outside SOURCE, or of a directory inside SOURCE that no remembered one
 * is below) cannot change what the set says, so it is ignored.  Moves into
 * SOURCE make nothing wrong either: the set says only "inside".
 *
 * No window between a rename and its event: the kernel queues the event in
 * vfs_rename() (fsnotify_move), before rename(2) returns.  Each check
 * drains the queue (a non-blocking read, under the lock) before it trusts
 * the set, so a move that completed before the check began is always seen;
 * a rename concurrent with the check may be ordered either way, as with
 * the readlink check.  A walk that raced a move could remember a stale
 * chain after the move's event was judged against a set without that
 * chain: the walk keeps its chain only if the set was not forgotten
 * meanwhile and none of the moves drained meanwhile (the last
 * MEMO_RECENT are kept) moved a directory of the chain.
 *
 * The memory is used only where the kernel reports every change: a local
 * file system (remote renames on NFS and the like produce no events) with
 * file handles, on SOURCE's own mount, and a daemon allowed to watch a file
 * system (CAP_SYS_ADMIN).  Elsewhere every deep check walks, as before,
 * and the daemon says once why.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "confine_memo.h"
#include "linux_abi.h"
#include "lockdep.h"
#include "log.h"


#define MEMO_HANDLE_MAX 48	/* longer handles: no memory (walk) */
#define MEMO_MAX_COUNT 65536	/* remembered directories; more: forget all */
#define MEMO_MAX_DEPTH 65536
#define MEMO_RECENT 64		/* moves a walk may see and still remember */

struct memo_key {
	uint32_t hash;
	int type;
	uint32_t len;		/* 0: an empty slot */
	unsigned char bytes[MEMO_HANDLE_MAX];
};

struct ufs_confine_memo {
	pthread_mutex_t lock;
	int fan_fd;
	int root_mnt_id;
	int at_flags;			/* AT_HANDLE_FID, or 0 if the kernel lacks it */
	struct memo_key root;
	struct memo_key *slots;		/* open addressing, a power of two */
	size_t nslots, count;
	uint64_t moves;			/* directory moves and overflows drained */
	uint64_t resets;
	/* the last MEMO_RECENT moves: what moved (or its old parent), len 0: unknown */
	struct memo_key recent[MEMO_RECENT];
	bool broken;			/* the watch failed: remember nothing more */
	char events[8192] __attribute__((aligned(8)));
};

/*
 * The slow way, for paths longer than PATH_MAX: walk ".." from fd until
 * SOURCE's root (inside) or the file system root (outside).  O(depth)
 * system calls: used only where confine_memo.c cannot remember.
 */
static int check_beneath_walk(int fd, dev_t root_dev, ino_t root_ino)
{
	struct stat st, up_st;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), ret = -ENOENT;

	for (int depth = 0; cur >= 0 && depth < 65536; depth++) {
		int up;

		if (fstat(cur, &st)) {
			ret = -errno;
			break;
		}
		if (st.st_dev == root_dev && st.st_ino == root_ino) {
			ret = 0;
			break;
		}
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0 || fstat(up, &up_st) ||
		    (up_st.st_dev == st.st_dev && up_st.st_ino == st.st_ino)) {
			if (up >= 0)
				close(up);
			break;	/* reached / without meeting SOURCE */
		}
		close(cur);
		cur = up;
	}
	if (cur >= 0)
		close(cur);
	return ret;
}

static uint32_t key_hash(int type, const unsigned char *b, uint32_t len)
{
	uint32_t h = 2166136261u ^ (uint32_t)type;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

static int key_set(struct memo_key *k, int type, const unsigned char *b, uint32_t len)
{
	if (!len || len > MEMO_HANDLE_MAX)
		return -EOVERFLOW;
	k->type = type;
	k->len = len;
	memcpy(k->bytes, b, len);
	k->hash = key_hash(type, b, len);
	return 0;
}

static bool key_eq(const struct memo_key *a, const struct memo_key *b)
{
	return a->hash == b->hash && a->type == b->type && a->len == b->len &&
	       !memcmp(a->bytes, b->bytes, a->len);
}

/* fd's handle as fanotify spells it, and its mount. */
static int fd_key(struct ufs_confine_memo *m, int fd, struct memo_key *k, int *mnt_id)
{
	union {
		struct file_handle fh;
		char buf[sizeof(struct file_handle) + MEMO_HANDLE_MAX];
	} h;

	h.fh.handle_bytes = MEMO_HANDLE_MAX;
	if (name_to_handle_at(fd, "", &h.fh, mnt_id, AT_EMPTY_PATH | m->at_flags))
		return -errno;
	return key_set(k, h.fh.handle_type, h.fh.f_handle, h.fh.handle_bytes);
}

static struct memo_key *slot_of(struct memo_key *slots, size_t nslots, const struct memo_key *k)
{
	size_t i = k->hash & (nslots - 1);

	while (slots[i].len && !key_eq(&slots[i], k))
		i = (i + 1) & (nslots - 1);
	return &slots[i];
}

static bool find_locked(struct ufs_confine_memo *m, const struct memo_key *k)
{
	UFS_ASSERT_HELD(&m->lock);
	return slot_of(m->slots, m->nslots, k)->len != 0;
}

/* Forget every directory but SOURCE's root. */
static void reset_locked(struct ufs_confine_memo *m)
{
	UFS_ASSERT_HELD(&m->lock);
	struct memo_key *small = m->nslots > 1024 ? calloc(64, sizeof(*small)) : NULL;

	if (small) {	/* start small again rather than clear megabytes */
		free(m->slots);
		m->slots = small;
		m->nslots = 64;
	} else {
		memset(m->slots, 0, m->nslots * sizeof(*m->slots));
	}
	*slot_of(m->slots, m->nslots, &m->root) = m->root;
	m->count = 1;
	m->resets++;
}

static int grow_locked(struct ufs_confine_memo *m, size_t want)
{
	UFS_ASSERT_HELD(&m->lock);
	size_t n = m->nslots;
	struct memo_key *slots;

	while (want * 2 > n)
		n *= 2;
	if (n == m->nslots)
		return 0;
	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->nslots; i++)
		if (m->slots[i].len)
			*slot_of(slots, n, &m->slots[i]) = m->slots[i];
	free(m->slots);
	m->slots = slots;
	m->nslots = n;
	return 0;
}

static void insert_locked(struct ufs_confine_memo *m, const struct memo_key *keys, size_t n)
{
	UFS_ASSERT_HELD(&m->lock);
	if (n + 1 > MEMO_MAX_COUNT)
		return;
	if (m->count + n > MEMO_MAX_COUNT)
		reset_locked(m);
	if (grow_locked(m, m->count + n))
		return;	/* nothing inserted: the set stays closed upwards */
	for (size_t i = 0; i < n; i++) {
		struct memo_key *s = slot_of(m->slots, m->nslots, &keys[i]);

		if (!s->len) {
			*s = keys[i];
			m->count++;
		}
	}
}

/* Counts a directory move, and keeps what moved for the walks running. */
static void note_move_locked(struct ufs_confine_memo *m, const struct memo_key *what)
{
	UFS_ASSERT_HELD(&m->lock);
	static const struct memo_key unknown;

	m->recent[m->moves % MEMO_RECENT] = what ? *what : unknown;
	m->moves++;
}

/*
 * Does this event forget the set?  Only a move of a remembered directory
 * (the moved one's handle: FAN_REPORT_TARGET_FID), or, where the kernel
 * cannot name it, a move out of a remembered directory (the old parent's).
 * Events are packed without alignment (a name's length): read every field
 * by memcpy.
 */
static void judge_event_locked(struct ufs_confine_memo *m, const char *ev, size_t len)
{
	UFS_ASSERT_HELD(&m->lock);
	struct fanotify_event_metadata meta;
	struct memo_key moved = { 0 }, parent = { 0 };
	const char *p, *end = ev + len;

	memcpy(&meta, ev, sizeof(meta));
	if (meta.vers != FANOTIFY_METADATA_VERSION || meta.metadata_len < sizeof(meta)) {
		note_move_locked(m, NULL);
		reset_locked(m);
		return;
	}
	if (!(meta.mask & FAN_Q_OVERFLOW) && !(meta.mask & FAN_ONDIR))
		return;	/* a file moved: no directory left anything */
	for (p = ev + meta.metadata_len; p + sizeof(struct fanotify_event_info_header) <= end;) {
		const size_t fid_off = offsetof(struct fanotify_event_info_fid, handle);
		struct fanotify_event_info_header hdr;
		struct file_handle fh;
		struct memo_key *k;

		memcpy(&hdr, p, sizeof(hdr));
		if (hdr.len < sizeof(hdr) || hdr.len > (size_t)(end - p))
			break;
		k = NULL;
		if (hdr.info_type == FAN_EVENT_INFO_TYPE_FID)
			k = &moved;
		else if (hdr.info_type == FAN_EVENT_INFO_TYPE_DFID_NAME ||
			 hdr.info_type == FAN_EVENT_INFO_TYPE_DFID)
			k = &parent;
		if (k && hdr.len >= fid_off + sizeof(fh)) {
			memcpy(&fh, p + fid_off, sizeof(fh));
			if (hdr.len >= fid_off + sizeof(fh) + fh.handle_bytes)
				key_set(k, fh.handle_type,
					(const unsigned char *)p + fid_off + sizeof(fh), fh.handle_bytes);
		}
		p += hdr.len;
	}
	/*
	 * A move takes a remembered directory out only by moving it or an
	 * ancestor, which is then remembered too (closed upwards), and its old
	 * parent as well.  Anything not understood (an overflow, a handle too
	 * long, no record) forgets.
	 */
	if (meta.mask & FAN_Q_OVERFLOW)
		note_move_locked(m, NULL);
	else
		note_move_locked(m, moved.len ? &moved : parent.len ? &parent : NULL);
	if (!(meta.mask & FAN_Q_OVERFLOW) && moved.len && !find_locked(m, &moved))
		return;
	if (!(meta.mask & FAN_Q_OVERFLOW) && !moved.len && parent.len && !find_locked(m, &parent))
		return;
	reset_locked(m);
}

/* Reads every queued event; never blocks (FAN_NONBLOCK). */
static void drain_locked(struct ufs_confine_memo *m)
{
	UFS_ASSERT_HELD(&m->lock);
	for (;;) {
		ssize_t n = read(m->fan_fd, m->events, sizeof(m->events));
		struct fanotify_event_metadata meta;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			/* Cannot happen: forget, and stop remembering. */
			ufs_log_once(UFS_LOG_WARN, "confine: fanotify read failed (%s): walking every deep check",
				     n < 0 ? strerror(errno) : "end of file");
			note_move_locked(m, NULL);
			reset_locked(m);
			m->broken = true;
			return;
		}
		for (size_t off = 0; off + sizeof(meta) <= (size_t)n; off += meta.event_len) {
			memcpy(&meta, m->events + off, sizeof(meta));
			if (meta.event_len < sizeof(meta) || meta.event_len > (size_t)n - off) {
				note_move_locked(m, NULL);
				reset_locked(m);
				break;
			}
			judge_event_locked(m, m->events + off, meta.event_len);
		}
	}
}

/*
 * May a walk that started at (moves, resets) remember its chain?  Not if
 * the set was forgotten meanwhile (its top's ancestors may be gone), nor
 * if a move drained meanwhile named a directory of the chain (or could
 * have: unknown, or too many to tell): its event was judged against a set
 * without the chain.  Any other move cannot have changed the chain's
 * ancestry: its directory is neither in the chain nor remembered.
 */
static bool may_remember_locked(struct ufs_confine_memo *m, uint64_t moves, uint64_t resets,
				const struct memo_key *chain, size_t n)
{
	UFS_ASSERT_HELD(&m->lock);
	if (m->broken || m->resets != resets || m->moves - moves > MEMO_RECENT)
		return false;
	for (uint64_t i = moves; i < m->moves; i++) {
		const struct memo_key *r = &m->recent[i % MEMO_RECENT];

		if (!r->len)
			return false;
		for (size_t j = 0; j < n; j++)
			if (key_eq(r, &chain[j]))
				return false;
	}
	return true;
}

/* Returns 0 if cur's walk reached a remembered directory, -ENOENT if /, 1 to give up. */
static int walk(struct ufs_confine_memo *m, int fd, struct memo_key **chain, size_t *n)
{
	size_t cap = 1;
	int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0), ret = 1;
	struct memo_key prev = (*chain)[0];

	for (int depth = 0; cur >= 0 && depth < MEMO_MAX_DEPTH; depth++) {
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC), mnt_id;
		struct memo_key k;
		bool hit;

		if (up < 0 || fd_key(m, up, &k, &mnt_id) || mnt_id != m->root_mnt_id) {
			if (up >= 0)
				close(up);
			break;	/* another mount, or no handle: the plain walk decides */
		}
		close(cur);
		cur = up;
		if (key_eq(&k, &prev)) {
			ret = -ENOENT;	/* the file system's root, without meeting SOURCE */
			break;
		}
		pthread_mutex_lock(&m->lock);
		hit = find_locked(m, &k);
		pthread_mutex_unlock(&m->lock);
		if (hit) {
			ret = 0;
			break;
		}
		if (*n == cap) {
			struct memo_key *c;

			cap = cap < 32 ? 64 : cap * 2;
			c = realloc(*chain, cap * sizeof(*c));
			if (!c)
				break;
			*chain = c;
		}
		(*chain)[(*n)++] = k;
		prev = k;
	}
	if (cur >= 0)
		close(cur);
	return ret;
}

int ufs_confine_memo_check(struct ufs_confine_memo *m, int fd, dev_t root_dev, ino_t root_ino)
{
	struct memo_key *chain;
	uint64_t moves, resets;
	size_t n = 1;
	int mnt_id, ret;
	bool hit;

	if (!m)
		return check_beneath_walk(fd, root_dev, root_ino);
	chain = malloc(sizeof(*chain));
	if (!chain || fd_key(m, fd, &chain[0], &mnt_id) || mnt_id != m->root_mnt_id) {
		free(chain);
		return check_beneath_walk(fd, root_dev, root_ino);
	}
	pthread_mutex_lock(&m->lock);
	drain_locked(m);
	hit = !m->broken && find_locked(m, &chain[0]);
	moves = m->moves;
	resets = m->resets;
	pthread_mutex_unlock(&m->lock);
	if (hit) {
		free(chain);
		return 0;
	}
	ret = walk(m, fd, &chain, &n);
	if (!ret) {
		pthread_mutex_lock(&m->lock);
		drain_locked(m);
		if (may_remember_locked(m, moves, resets, chain, n))
			insert_locked(m, chain, n);
		pthread_mutex_unlock(&m->lock);
	}
	free(chain);
	return ret == 1 ? check_beneath_walk(fd, root_dev, root_ino) : ret;
}

uint64_t ufs_confine_memo_moves(struct ufs_confine_memo *m)
{
	uint64_t moves;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	drain_locked(m);
	moves = m->broken ? 0 : m->moves + 1;
	pthread_mutex_unlock(&m->lock);
	return moves;
}

bool ufs_confine_memo_watched(struct ufs_confine_memo *m, int fd)
{
	struct memo_key k;
	int mnt_id;

	return m && !fd_key(m, fd, &k, &mnt_id) && mnt_id == m->root_mnt_id;
}

/* Local file systems whose every rename the kernel sees (and reports). */
static bool local_fs(int fd)
{
	static const long types[] = {
		0xEF53,		/* ext2/3/4 */
		0x58465342,	/* xfs */
		0x9123683E,	/* btrfs */
		0x01021994,	/* tmpfs */
		0xF2F52010,	/* f2fs */
		0xCA451A4E,	/* bcachefs */
	};
	struct statfs sf;

	if (fstatfs(fd, &sf))
		return false;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if ((long)sf.f_type == types[i])
			return true;
	return false;
}

static const char *memo_open(struct ufs_confine_memo *m, int root_fd)
{
	int mnt_id, ret;

	if (!local_fs(root_fd))
		return "the source's file system is not a known local one";
	m->at_flags = AT_HANDLE_FID;
	ret = fd_key(m, root_fd, &m->root, &mnt_id);
	if (ret == -EINVAL) {
		m->at_flags = 0;	/* before 6.5: the same handle, encoded for export */
		ret = fd_key(m, root_fd, &m->root, &mnt_id);
	}
	if (ret)
		return "the source has no file handles";
	m->root_mnt_id = mnt_id;
	/* The moved directory's own handle too, where the kernel has it (5.17). */
	m->fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
					  FAN_REPORT_DFID_NAME_TARGET,
				  O_RDONLY | O_CLOEXEC);
	if (m->fan_fd < 0 && errno == EINVAL)
		m->fan_fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK |
						  FAN_REPORT_DFID_NAME,
					  O_RDONLY | O_CLOEXEC);
	if (m->fan_fd < 0)
		return errno == EPERM ? "fanotify needs CAP_SYS_ADMIN" : "fanotify_init failed";
	if (fanotify_mark(m->fan_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_MOVED_FROM | FAN_ONDIR,
			  root_fd, ".")) {
		close(m->fan_fd);
		return errno == EPERM ? "a file system watch needs CAP_SYS_ADMIN" :
					"the file system cannot be watched (fanotify_mark)";
	}
	return NULL;
}

/* Called once SOURCE's root is open; without the memory, deep checks walk. */
struct ufs_confine_memo *ufs_confine_memo_new(int root_fd)
{
	struct ufs_confine_memo *m = calloc(1, sizeof(*m));
	const char *why = m ? NULL : "out of memory";

	if (m && !(why = memo_open(m, root_fd))) {
		m->nslots = 64;
		m->slots = calloc(m->nslots, sizeof(*m->slots));
		if (!m->slots) {
			close(m->fan_fd);
			why = "out of memory";
		}
	}
	if (why) {
		ufs_log(UFS_LOG_INFO,
			"confine: directories deeper than PATH_MAX are walked up on every check (%s)", why);
		free(m);
		return NULL;
	}
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_lock(&m->lock);
	reset_locked(m);
	m->resets = 0;
	pthread_mutex_unlock(&m->lock);
	return m;
}

void ufs_confine_memo_free(struct ufs_confine_memo *m)
{
	if (!m)
		return;
	close(m->fan_fd);
	pthread_mutex_destroy(&m->lock);
	free(m->slots);
	free(m);
}
