// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A caller whose requests come from a thread acting with credentials not
 * its own.  An io-wq worker keeps the credentials of the task that made
 * it and runs each request with the submitter's put over them
 * (override_creds, io_uring/io_uring.c); the last idle worker of its kind
 * does not exit (io_uring/io-wq.c).  Made while root, it stays after the
 * process drops to UID:GID, and runs the process's io_uring calls from then
 * on as UID:GID with root's capabilities as its own.
 *
 * usage: iowq-drop UID GID PATH COUNT [link|open|read]
 * link (the default): links PATH to PATH.0 .. PATH.COUNT-1 through the
 * worker (long names: a directory block every few), stopping at the first
 * error, and prints "worker TID", then "made N err ERRNO" ("err 0" when
 * all were made).  open: opens PATH COUNT times, holding each, prints
 * "made N err ERRNO" the same way, and holds them until a line on stdin.  read: opens PATH through the worker and
 * prints what one read(2) of it gives (COUNT is ignored).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct io_uring ring;

/* Run one prepared call on an io-wq worker (IOSQE_ASYNC); its result. */
static int run_async(struct io_uring_sqe *sqe)
{
	struct io_uring_cqe *cqe;
	int res;

	sqe->flags |= IOSQE_ASYNC;
	if (io_uring_submit(&ring) != 1 || io_uring_wait_cqe(&ring, &cqe)) {
		fprintf(stderr, "iowq-drop: io_uring failed\n");
		exit(2);
	}
	res = cqe->res;
	io_uring_cqe_seen(&ring, cqe);
	return res;
}

/* The io-wq worker's thread id ("iou-wrk-PID"), or 0. */
static long worker_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long tid = 0;

	while (d && !tid && (e = readdir(d))) {
		char path[300], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "re");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "iou-wrk", 7))
			tid = atol(e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return tid;
}

static int open_async(const char *path)
{
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);

	io_uring_prep_openat(s, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	return run_async(s);
}

/* open: PATH count times, held; read: PATH's first 64 KiB to stdout, opened by the worker. */
static int other_mode(const char *mode, const char *path, int count)
{
	static char buf[65536];
	int i, res = 0;

	if (!strcmp(mode, "open")) {
		for (i = 0; i < count && (res = open_async(path)) >= 0; i++)
			;
		printf("made %d err %d\n", i, res < 0 ? -res : 0);
		/* Held until a line comes on stdin (or it ends). */
		fflush(stdout);
		getchar();
		return 0;
	}
	if (strcmp(mode, "read")) {
		fprintf(stderr, "iowq-drop: unknown mode %s\n", mode);
		return 2;
	}
	/*
	 * Opened through the worker, read with read(2): an io_uring read is an
	 * async kiocb, which the kernel stops at i_size on a FOPEN_DIRECT_IO
	 * file (fs/fuse/file.c: fuse_direct_IO), and the control file's is 0.
	 */
	res = open_async(path);
	if (res >= 0) {
		int fd = res;

		res = read(fd, buf, sizeof(buf));
		if (res < 0)
			res = -errno;
		else
			fwrite(buf, 1, res, stdout);
		close(fd);
	}
	if (res < 0) {
		fprintf(stderr, "iowq-drop: %s: %s\n", path, strerror(-res));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	char name[4096];
	int count, i, res = 0;
	uid_t uid;
	gid_t gid;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: iowq-drop UID GID PATH COUNT [link|open|read]\n");
		return 2;
	}
	uid = atoi(argv[1]);
	gid = atoi(argv[2]);
	count = atoi(argv[4]);
	if (io_uring_queue_init(8, &ring, 0))
		return 2;
	/* A worker made while root. */
	res = run_async(({
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);
		io_uring_prep_openat(s, AT_FDCWD, "/dev/null", O_RDONLY | O_CLOEXEC, 0);
		s;
	}));
	if (res < 0) {
		fprintf(stderr, "iowq-drop: open /dev/null: %s\n", strerror(-res));
		return 2;
	}
	close(res);
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		perror("iowq-drop: drop");
		return 2;
	}
	printf("worker %ld\n", worker_tid());
	if (argc == 6 && strcmp(argv[5], "link"))
		return other_mode(argv[5], argv[3], count);
	for (i = 0; i < count; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(&ring);

		snprintf(name, sizeof(name), "%s.%d.%0200d", argv[3], i, 0);
		io_uring_prep_linkat(s, AT_FDCWD, argv[3], AT_FDCWD, name, 0);
		res = run_async(s);
		if (res < 0)
			break;
	}
	printf("made %d err %d\n", i, res < 0 ? -res : 0);
	return 0;
}
