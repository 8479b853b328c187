// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * cfr-probe - check the proposed IORING_OP_COPY_FILE_RANGE against
 * copy_file_range(2)
 *
 * Usage: cfr-probe [DIR]
 *
 * Works on temporary files in DIR (default $TMPDIR, else /tmp), so it can
 * be pointed at tmpfs, ext4, xfs or btrfs. Every copy is done twice on
 * identical files, once through the ring and once through the syscall, and
 * the results, file positions and copied bytes must agree. Then a queued
 * copy is cancelled (-ECANCELED) and a running byte copy is cancelled (a
 * short count, or -EINTR before the first byte).
 *
 * SQE layout (as IORING_OP_SPLICE): fd = fd_out, off = off_out,
 * splice_fd_in = fd_in, splice_off_in = off_in, len, splice_flags = 0 or
 * SPLICE_F_FD_IN_FIXED. An offset of -1 uses and advances the file position.
 *
 * Output is TAP. Exit status: 0 all passed, 1 a check failed, 77 the kernel
 * has no IORING_OP_COPY_FILE_RANGE (or no io_uring).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "../unit/tap.h"

/* Not in liburing 2.3's header: the next opcode after URING_CMD128. */
#define CFR_OP_COPY_FILE_RANGE 65
#ifndef SPLICE_F_FD_IN_FIXED
#define SPLICE_F_FD_IN_FIXED (1U << 31)
#endif

#define SRC_SIZE (256 * 1024)
#define DST_SIZE (64 * 1024)
/* The running copy: a sparse source, so only what is copied uses memory. */
#define BIG_SIZE (256U << 20)
#define WAIT_SECS 30

enum setup {
	SETUP_FILES,	  /* fd_in: source, fd_out: destination */
	SETUP_SAME_FILE,  /* both ends the source */
	SETUP_WRONLY_IN,  /* fd_in open for writing only */
	SETUP_APPEND_OUT, /* fd_out opened with O_APPEND */
	SETUP_PIPE_IN,	  /* fd_in a pipe */
	SETUP_CLOSED_IN,  /* fd_in not open */
};

struct cfr_case {
	const char *name;
	enum setup setup;
	off_t pos_in, pos_out; /* file positions before the copy */
	int64_t off_in, off_out;
	uint32_t len;
	uint32_t flags;
	int64_t want; /* expected result; ANY: only parity */
	bool up_to;   /* want is a bound: each side may copy less (at least 1) */
};

#define ANY INT64_MIN

struct files {
	int in, out;
	int spare[2]; /* what else to close */
	char src[PATH_MAX], dst[PATH_MAX];
};

enum user_data {
	UD_COPY = 1,
	UD_BLOCKER,
	UD_QUEUED,
	UD_RUNNING,
	UD_CANCEL,
	UD_NOP,
};

static const char *dir;
static unsigned int file_seq;

static void die(const char *what)
{
	printf("Bail out! %s: %s\n", what, strerror(errno));
	exit(1);
}

static void prep_copy(struct io_uring_sqe *sqe, int fd_in, int64_t off_in, int fd_out,
		      int64_t off_out, uint32_t len, uint32_t flags)
{
	/* Packed like io_uring_prep_splice(), with the new opcode. */
	io_uring_prep_rw(CFR_OP_COPY_FILE_RANGE, sqe, fd_out, NULL, len, (uint64_t)off_out);
	sqe->splice_off_in = (uint64_t)off_in;
	sqe->splice_fd_in = fd_in;
	sqe->splice_flags = flags;
}

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe) {
		errno = EBUSY;
		die("io_uring_get_sqe");
	}
	return sqe;
}

/* Waits for the completion of USER_DATA, with a deadline so a lost CQE
 * fails the test instead of hanging it. Others are not expected here. */
static int wait_for(struct io_uring *ring, uint64_t user_data, int *res)
{
	struct __kernel_timespec ts = { .tv_sec = WAIT_SECS };
	struct io_uring_cqe *cqe;
	int ret;

	ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
	if (ret < 0) {
		printf("# waiting for completion %llu: %s\n", (unsigned long long)user_data,
		       strerror(-ret));
		return ret;
	}
	if (cqe->user_data != user_data) {
		printf("# got completion %llu (res %d), wanted %llu\n",
		       (unsigned long long)cqe->user_data, cqe->res,
		       (unsigned long long)user_data);
		io_uring_cqe_seen(ring, cqe);
		return -EPROTO;
	}
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 0;
}

/* Collects N completions in any order into res[user_data]. */
static int wait_for_all(struct io_uring *ring, int n, int res[], int nres)
{
	struct __kernel_timespec ts = { .tv_sec = WAIT_SECS };
	struct io_uring_cqe *cqe;
	int ret;

	while (n-- > 0) {
		ret = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
		if (ret < 0) {
			printf("# waiting for a completion: %s\n", strerror(-ret));
			return ret;
		}
		if (cqe->user_data < (uint64_t)nres)
			res[cqe->user_data] = cqe->res;
		io_uring_cqe_seen(ring, cqe);
	}
	return 0;
}

static int ring_copy(struct io_uring *ring, int fd_in, int64_t off_in, int fd_out,
		     int64_t off_out, uint32_t len, uint32_t flags, uint8_t sqe_flags)
{
	struct io_uring_sqe *sqe = get_sqe(ring);
	int res, ret;

	prep_copy(sqe, fd_in, off_in, fd_out, off_out, len, flags);
	sqe->flags |= sqe_flags;
	sqe->user_data = UD_COPY;
	ret = io_uring_submit(ring);
	if (ret != 1)
		return ret < 0 ? ret : -EIO;
	ret = wait_for(ring, UD_COPY, &res);
	return ret < 0 ? ret : res;
}

/* The syscall with the ring's conventions: -1 is a NULL offset pointer,
 * errors are -errno. */
static int64_t sys_copy(int fd_in, int64_t off_in, int fd_out, int64_t off_out, uint32_t len,
			uint32_t flags)
{
	loff_t in = off_in, out = off_out;
	ssize_t ret;

	ret = copy_file_range(fd_in, off_in == -1 ? NULL : &in, fd_out,
			      off_out == -1 ? NULL : &out, len, flags);
	return ret < 0 ? -errno : ret;
}

static void fill(int fd, size_t size, unsigned int seed)
{
	static unsigned char buf[SRC_SIZE];
	size_t i;

	for (i = 0; i < size; i++)
		buf[i] = (unsigned char)(i * 131 + seed + (i >> 9));
	if (pwrite(fd, buf, size, 0) != (ssize_t)size)
		die("pwrite");
}

static int make_file(char *path, int flags)
{
	int fd;

	snprintf(path, PATH_MAX, "%s/cfr-probe.%d.%u", dir, (int)getpid(), file_seq++);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR | flags, 0600);
	if (fd < 0)
		die(path);
	return fd;
}

static int reopen(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		die(path);
	return fd;
}

/* A descriptor number nothing has open (and that no later open reuses,
 * unlike a just-closed one). */
static int closed_fd(void)
{
	int fd;

	for (fd = 1000; fcntl(fd, F_GETFD) >= 0; fd++)
		;
	return fd;
}

static void setup_files(struct files *f, enum setup setup)
{
	int fds[2];

	f->spare[0] = f->spare[1] = -1;
	f->in = make_file(f->src, 0);
	fill(f->in, SRC_SIZE, 7);
	f->out = make_file(f->dst, setup == SETUP_APPEND_OUT ? O_APPEND : 0);
	fill(f->out, DST_SIZE, 99);

	switch (setup) {
	case SETUP_FILES:
	case SETUP_APPEND_OUT:
		break;
	case SETUP_SAME_FILE:
		f->spare[0] = f->out;
		f->out = f->in;
		break;
	case SETUP_WRONLY_IN:
		f->spare[0] = f->in;
		f->in = reopen(f->src, O_WRONLY);
		break;
	case SETUP_PIPE_IN:
		if (pipe(fds) < 0)
			die("pipe");
		f->spare[0] = f->in;
		f->spare[1] = fds[1];
		f->in = fds[0];
		break;
	case SETUP_CLOSED_IN:
		f->spare[0] = f->in;
		f->in = closed_fd();
		break;
	}
}

static void close_files(struct files *f, enum setup setup)
{
	if (setup != SETUP_CLOSED_IN)
		close(f->in);
	if (f->out != f->in)
		close(f->out);
	if (f->spare[0] >= 0)
		close(f->spare[0]);
	if (f->spare[1] >= 0)
		close(f->spare[1]);
	unlink(f->src);
	unlink(f->dst);
}

static off_t position(int fd)
{
	return lseek(fd, 0, SEEK_CUR);
}

static void set_positions(struct files *f, const struct cfr_case *c)
{
	if (c->setup == SETUP_CLOSED_IN || c->setup == SETUP_PIPE_IN)
		return;
	if (lseek(f->in, c->pos_in, SEEK_SET) < 0 || lseek(f->out, c->pos_out, SEEK_SET) < 0)
		die("lseek");
}

/* Reads the whole file at PATH (the destination, as it ended up). */
static char *slurp(const char *path, size_t *size)
{
	struct stat st;
	char *buf;
	int fd = reopen(path, O_RDONLY);

	if (fstat(fd, &st) < 0)
		die("fstat");
	buf = malloc(st.st_size + 1);
	if (!buf || pread(fd, buf, st.st_size, 0) != st.st_size)
		die("read back");
	close(fd);
	*size = st.st_size;
	return buf;
}

/* The first n bytes of a and b are the same. */
static int same_prefix(const char *a, const char *b, size_t n)
{
	size_t na, nb;
	char *ba = slurp(a, &na), *bb = slurp(b, &nb);
	int same = na >= n && nb >= n && !memcmp(ba, bb, n);

	if (!same)
		printf("#   the first %zu bytes differ\n", n);
	free(ba);
	free(bb);
	return same;
}

static int same_contents(const char *a, const char *b)
{
	size_t na, nb;
	char *ba = slurp(a, &na), *bb = slurp(b, &nb);
	int same = na == nb && !memcmp(ba, bb, na);

	if (!same)
		printf("#   contents differ: %zu vs %zu bytes\n", na, nb);
	free(ba);
	free(bb);
	return same;
}

/* One copy through the ring and one through the syscall, on twin files. */
static void run_case(struct io_uring *ring, const struct cfr_case *c)
{
	struct files r, s;
	off_t r_in = -1, r_out = -1, s_in = -1, s_out = -1;
	int64_t rres, sres;
	int pass;

	setup_files(&r, c->setup);
	setup_files(&s, c->setup);
	set_positions(&r, c);
	set_positions(&s, c);

	rres = ring_copy(ring, r.in, c->off_in, r.out, c->off_out, c->len, c->flags, 0);
	sres = sys_copy(s.in, c->off_in, s.out, c->off_out, c->len, c->flags);
	if (c->setup != SETUP_CLOSED_IN && c->setup != SETUP_PIPE_IN) {
		r_in = position(r.in);
		s_in = position(s.in);
	}
	r_out = position(r.out);
	s_out = position(s.out);

	if (c->up_to) {
		/*
		 * copy_file_range(2) may copy less than it could (the splice
		 * fallback stops at a short read): each side's count is its
		 * own, and its bytes must be the source's.
		 */
		pass = rres > 0 && sres > 0 && rres <= c->want && sres <= c->want &&
		       same_prefix(r.dst, r.src, rres) && same_prefix(s.dst, s.src, sres);
		goto report;
	}
	pass = rres == sres && (c->want == ANY || rres == c->want) && r_in == s_in &&
	       r_out == s_out;
	if (pass && c->off_in == -1 && rres > 0)
		pass = r_in == c->pos_in + rres;
	if (pass && c->off_out == -1 && rres > 0 && c->setup != SETUP_APPEND_OUT)
		pass = r_out == c->pos_out + rres;
	if (pass)
		pass = same_contents(r.dst, s.dst) && same_contents(r.src, s.src);
report:
	t_ok(pass, __FILE__, __LINE__, "%s: ring %lld, syscall %lld", c->name, (long long)rres,
	     (long long)sres);
	if (!pass) {
		if (c->want != ANY)
			printf("#   wanted %lld\n", (long long)c->want);
		printf("#   f_pos in %lld/%lld, out %lld/%lld (ring/syscall)\n", (long long)r_in,
		       (long long)s_in, (long long)r_out, (long long)s_out);
	}
	close_files(&r, c->setup);
	close_files(&s, c->setup);
}

static const struct cfr_case cases[] = {
	{ "explicit offsets", SETUP_FILES, 0, 0, 4096 + 1000, 3000, 20000, 0, 20000 },
	{ "-1 offsets use and advance f_pos", SETUP_FILES, 5000, 7, -1, -1, 10000, 0, 10000 },
	{ "-1 in, explicit out", SETUP_FILES, 123, 456, -1, 60000, 9999, 0, 9999 },
	{ "explicit in, -1 out", SETUP_FILES, 123, 456, 17, -1, 12345, 0, 12345 },
	{ "past the destination's end", SETUP_FILES, 0, 0, 0, DST_SIZE + 5000, 4096, 0, 4096 },
	{ "zero length", SETUP_FILES, 11, 13, -1, -1, 0, 0, 0 },
	{ "zero length, explicit offsets", SETUP_FILES, 0, 0, 100, 200, 0, 0, 0 },
	{ "beyond the source's EOF", SETUP_FILES, 0, 0, SRC_SIZE + 100, 0, 4096, 0, 0 },
	{ "at the source's EOF", SETUP_FILES, 0, 0, SRC_SIZE, 0, 4096, 0, 0 },
	{ "across the source's EOF: short", SETUP_FILES, 0, 0, SRC_SIZE - 100, 0, 4096, 0, 100 },
	{ "len 4G-1 is clamped to what is there", SETUP_FILES, 0, 0, 0, 0, UINT32_MAX, 0,
	  SRC_SIZE, true },
	{ "unknown flag: EINVAL", SETUP_FILES, 0, 0, 0, 0, 4096, 1, -EINVAL },
	{ "high flag bit: EINVAL", SETUP_FILES, 0, 0, 0, 0, 4096, 1U << 30, -EINVAL },
	{ "negative offset: EOVERFLOW", SETUP_FILES, 0, 0, -2, 0, 4096, 0, -EOVERFLOW },
	{ "negative offset: EINVAL", SETUP_FILES, 0, 0, 0, -(1 << 20), 4096, 0, -EINVAL },
	{ "overlap in one file: EINVAL", SETUP_SAME_FILE, 0, 0, 0, 1000, 4096, 0, -EINVAL },
	{ "same file, no overlap", SETUP_SAME_FILE, 0, 0, 0, 8192, 4096, 0, 4096 },
	{ "fd_in write-only: EBADF", SETUP_WRONLY_IN, 0, 0, 0, 0, 4096, 0, -EBADF },
	{ "fd_out O_APPEND: EBADF", SETUP_APPEND_OUT, 0, 0, 0, 0, 4096, 0, -EBADF },
	{ "fd_in a pipe: EINVAL", SETUP_PIPE_IN, 0, 0, 0, 0, 4096, 0, -EINVAL },
	{ "fd_in closed: EBADF", SETUP_CLOSED_IN, 0, 0, 0, 0, 4096, 0, -EBADF },
};

/* IOSQE_FIXED_FILE for fd_out and SPLICE_F_FD_IN_FIXED for fd_in. */
static void test_fixed_files(struct io_uring *ring)
{
	struct files r, s;
	int fds[2], res, sres, ret;

	setup_files(&r, SETUP_FILES);
	setup_files(&s, SETUP_FILES);
	fds[0] = r.out;
	fds[1] = r.in;
	ret = io_uring_register_files(ring, fds, 2);
	if (ret < 0) {
		t_ok(0, __FILE__, __LINE__, "fixed files: register: %s", strerror(-ret));
		goto out;
	}
	res = ring_copy(ring, 1, 1000, 0, 2000, 30000, SPLICE_F_FD_IN_FIXED, IOSQE_FIXED_FILE);
	sres = sys_copy(s.in, 1000, s.out, 2000, 30000, 0);
	t_ok(res == 30000 && res == sres && same_contents(r.dst, s.dst), __FILE__, __LINE__,
	     "fixed fd_in and fd_out: ring %d, syscall %d", res, sres);
	res = ring_copy(ring, 7, 0, 0, 0, 100, SPLICE_F_FD_IN_FIXED, IOSQE_FIXED_FILE);
	t_ok(res == -EBADF, __FILE__, __LINE__, "unregistered fixed fd_in: %d (EBADF)", res);
	io_uring_unregister_files(ring);
out:
	close_files(&r, SETUP_FILES);
	close_files(&s, SETUP_FILES);
}

/* A short copy (EOF) fails its link, like a short read. */
static void test_short_copy_breaks_link(struct io_uring *ring)
{
	struct files f;
	struct io_uring_sqe *sqe;
	int res[UD_NOP + 1] = { 0 };

	setup_files(&f, SETUP_FILES);
	sqe = get_sqe(ring);
	prep_copy(sqe, f.in, SRC_SIZE - 10, f.out, 0, 4096, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = UD_COPY;
	sqe = get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = UD_NOP;
	if (io_uring_submit(ring) != 2 || wait_for_all(ring, 2, res, UD_NOP + 1) < 0)
		die("linked copy");
	t_ok(res[UD_COPY] == 10 && res[UD_NOP] == -ECANCELED, __FILE__, __LINE__,
	     "short copy breaks the link: copy %d, linked nop %d", res[UD_COPY], res[UD_NOP]);

	sqe = get_sqe(ring);
	prep_copy(sqe, f.in, 0, f.out, 0, 4096, 0);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = UD_COPY;
	sqe = get_sqe(ring);
	io_uring_prep_nop(sqe);
	sqe->user_data = UD_NOP;
	if (io_uring_submit(ring) != 2 || wait_for_all(ring, 2, res, UD_NOP + 1) < 0)
		die("linked copy");
	t_ok(res[UD_COPY] == 4096 && res[UD_NOP] == 0, __FILE__, __LINE__,
	     "full copy keeps the link: copy %d, linked nop %d", res[UD_COPY], res[UD_NOP]);
	close_files(&f, SETUP_FILES);
}

/*
 * One io-wq worker of each kind, set before any work is punted: lowering
 * the limit later does not retire idle workers that already exist.
 */
static int limit_to_one_worker(struct io_uring *ring)
{
	unsigned int workers[2] = { 1, 1 };
	int ret = io_uring_register_iowq_max_workers(ring, workers);

	if (ret < 0)
		printf("# IORING_REGISTER_IOWQ_MAX_WORKERS: %s\n", strerror(-ret));
	return ret == 0;
}

/*
 * A forced-async request gets its file only when it is issued, so io-wq
 * sees no regular file and splice and copies alike go to the unbound
 * workers. With the one unbound worker held by a splice from an empty pipe,
 * a copy queues behind it and must be cancelled with -ECANCELED.
 */
static void test_cancel_queued(struct io_uring *ring, int one_worker)
{
	struct io_uring_sqe *sqe;
	struct files f;
	int res[UD_NOP + 1] = { 0 };
	int p[2];

	if (!one_worker) {
		t_ok(0, __FILE__, __LINE__, "cancel queued: cannot limit io-wq to one worker");
		return;
	}
	setup_files(&f, SETUP_FILES);
	if (pipe(p) < 0)
		die("pipe");

	sqe = get_sqe(ring);
	io_uring_prep_splice(sqe, p[0], -1, f.out, 0, 4096, 0);
	sqe->user_data = UD_BLOCKER;
	sqe = get_sqe(ring);
	prep_copy(sqe, f.in, 0, f.out, 0, 4096, 0);
	sqe->user_data = UD_QUEUED;
	if (io_uring_submit(ring) != 2)
		die("submit blocker and copy");
	usleep(100 * 1000); /* let the worker take the splice */

	res[UD_BLOCKER] = INT_MIN;
	sqe = get_sqe(ring);
	io_uring_prep_cancel64(sqe, UD_QUEUED, 0);
	sqe->user_data = UD_CANCEL;
	if (io_uring_submit(ring) != 1 || wait_for_all(ring, 2, res, UD_NOP + 1) < 0)
		die("cancel queued copy");
	t_ok(res[UD_QUEUED] == -ECANCELED && res[UD_CANCEL] == 0, __FILE__, __LINE__,
	     "queued copy cancelled: copy %d (ECANCELED), cancel %d", res[UD_QUEUED],
	     res[UD_CANCEL]);
	if (res[UD_BLOCKER] != INT_MIN)
		printf("#   the blocking splice completed early: %d\n", res[UD_BLOCKER]);

	/* Release the blocker: one byte for the splice to move. */
	if (write(p[1], "x", 1) != 1)
		die("write to the pipe");
	if (res[UD_BLOCKER] == INT_MIN && wait_for_all(ring, 1, res, UD_NOP + 1) < 0)
		die("blocker");
	close(p[0]);
	close(p[1]);
	close_files(&f, SETUP_FILES);
}

/* Has the copy with user_data UD_RUNNING completed? Then its result. */
static int peek_running(struct io_uring *ring, int *res)
{
	struct io_uring_cqe *cqe;

	if (io_uring_peek_cqe(ring, &cqe) < 0)
		return 0;
	*res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return 1;
}

/*
 * A long byte copy is cancelled once it has started: the io-wq worker is
 * signalled and the copy ends early with what it has done.
 *
 * The cancel itself answers -EALREADY, or -ENOENT when the copy stopped
 * that fast: io_try_cancel() goes on to poll, waitid, futex and timeout
 * cancellation after io-wq said -EALREADY, and then __io_async_cancel()
 * looks in io-wq once more, where the copy may be gone by then.
 */
static void test_cancel_running(struct io_uring *ring)
{
	struct timespec tick = { .tv_nsec = 1000 * 1000 };
	int res[UD_NOP + 1] = { 0 };
	struct io_uring_sqe *sqe;
	struct stat st = { 0 };
	struct files f;
	int waited = 0, done = 0, copy_res = 0, cancel_res;

	f.spare[0] = f.spare[1] = -1;
	f.in = make_file(f.src, 0);
	f.out = make_file(f.dst, 0);
	if (ftruncate(f.in, BIG_SIZE) < 0)
		die("ftruncate");

	sqe = get_sqe(ring);
	prep_copy(sqe, f.in, 0, f.out, 0, BIG_SIZE, 0);
	sqe->user_data = UD_RUNNING;
	if (io_uring_submit(ring) != 1)
		die("submit big copy");
	/* Running means the destination has started to grow. */
	while (!done && st.st_size == 0 && waited++ < WAIT_SECS * 1000) {
		nanosleep(&tick, NULL);
		if (fstat(f.out, &st) < 0)
			die("fstat");
		done = peek_running(ring, &copy_res);
	}
	if (done) {
		printf("ok %d - # SKIP cancel running: the copy finished first (%d; reflink?)\n",
		       ++tap_count, copy_res);
		goto out;
	}

	sqe = get_sqe(ring);
	io_uring_prep_cancel64(sqe, UD_RUNNING, 0);
	sqe->user_data = UD_CANCEL;
	if (io_uring_submit(ring) != 1 || wait_for_all(ring, 2, res, UD_NOP + 1) < 0)
		die("cancel running copy");
	copy_res = res[UD_RUNNING];
	cancel_res = res[UD_CANCEL];
	if (fstat(f.out, &st) < 0)
		die("fstat");
	t_ok((cancel_res == -EALREADY || cancel_res == -ENOENT) &&
		     (copy_res == -EINTR ||
		      (copy_res > 0 && copy_res < (int)BIG_SIZE && st.st_size == copy_res)),
	     __FILE__, __LINE__,
	     "running copy cancelled: copy %d of %u (short), destination %lld, cancel %d",
	     copy_res, BIG_SIZE, (long long)st.st_size, cancel_res);
out:
	close_files(&f, SETUP_FILES);
}

static void skip_all(const char *why)
{
	struct utsname u;

	uname(&u);
	printf("1..0 # SKIP %s (kernel %s)\n", why, u.release);
	exit(77);
}

static void probe(struct io_uring *ring)
{
	struct io_uring_probe *p = io_uring_get_probe_ring(ring);
	int last_op;

	if (!p)
		skip_all("io_uring_get_probe_ring failed");
	last_op = p->last_op;
	if (!io_uring_opcode_supported(p, CFR_OP_COPY_FILE_RANGE)) {
		io_uring_free_probe(p);
		printf("# opcode %d not supported, last_op %d\n", CFR_OP_COPY_FILE_RANGE, last_op);
		skip_all("no IORING_OP_COPY_FILE_RANGE");
	}
	io_uring_free_probe(p);
	t_ok(1, __FILE__, __LINE__, "opcode %d (COPY_FILE_RANGE) supported, last_op %d",
	     CFR_OP_COPY_FILE_RANGE, last_op);
}

int main(int argc, char **argv)
{
	struct io_uring ring;
	int ret, one_worker;
	size_t i;

	if (argc > 2) {
		fprintf(stderr, "usage: %s [DIR]\n", argv[0]);
		return 2;
	}
	dir = argc > 1 ? argv[1] : getenv("TMPDIR");
	if (!dir || !*dir)
		dir = "/tmp";
	setvbuf(stdout, NULL, _IOLBF, 0);

	ret = io_uring_queue_init(8, &ring, 0);
	if (ret < 0) {
		errno = -ret;
		skip_all("no io_uring");
	}
	probe(&ring);
	one_worker = limit_to_one_worker(&ring);
	printf("# files in %s\n", dir);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&ring, &cases[i]);
	test_fixed_files(&ring);
	test_short_copy_breaks_link(&ring);
	test_cancel_queued(&ring, one_worker);
	test_cancel_running(&ring);
	io_uring_queue_exit(&ring);
	return t_done();
}
