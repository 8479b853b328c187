// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * probe: does a second thread run while the first one blocks in a system
 * call?  Under valgrind only if valgrind releases its global lock around that
 * call; run.sh asks before it runs cases that block in it.
 *
 *   probe uring   io_uring_enter waiting for a completion that the second
 *                 thread submits (the io_uring transport)
 *   probe ofd     fcntl(F_OFD_SETLKW) waiting for a lock another process
 *                 holds for 2 s (SETLKW with posix_locks=on)
 *
 * Exit status 0: the second thread ran during the wait; 1: it did not.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static struct io_uring ring;
static atomic_bool ran;
static bool submit;

static void *second(void *arg)
{
	(void)arg;
	usleep(100 * 1000);
	atomic_store(&ran, true);
	if (submit) {
		io_uring_prep_nop(io_uring_get_sqe(&ring));
		io_uring_submit(&ring);
	}
	return NULL;
}

static int probe_uring(void)
{
	struct __kernel_timespec ts = { .tv_sec = 2 };
	struct io_uring_cqe *cqe;
	pthread_t t;
	int ret;

	if (io_uring_queue_init(4, &ring, 0))
		return 1;
	submit = true;
	pthread_create(&t, NULL, second, NULL);
	/* Blocks in io_uring_enter until the second thread's NOP completes. */
	ret = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
	printf("io_uring_enter: %s\n", ret ? strerror(-ret) : "the second thread's NOP completed");
	pthread_join(t, NULL);
	return ret != 0;
}

static int probe_ofd(void)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	char path[] = "/tmp/ufs-probe-XXXXXX";
	int fd = mkstemp(path), ready[2];
	bool during;
	pthread_t t;
	pid_t pid;
	char c;

	if (fd < 0 || pipe(ready))
		return 1;
	pid = fork();
	if (!pid) {
		int f2 = open(path, O_RDWR);

		if (f2 < 0 || fcntl(f2, F_OFD_SETLK, &fl))
			_exit(1);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		sleep(2);
		_exit(0);
	}
	if (read(ready[0], &c, 1) != 1)
		return 1;
	pthread_create(&t, NULL, second, NULL);
	/* Blocks until the child exits, 2 s from now. */
	if (fcntl(fd, F_OFD_SETLKW, &fl))
		return 1;
	during = atomic_load(&ran);
	printf("fcntl(F_OFD_SETLKW): the second thread %s during the wait\n",
	       during ? "ran" : "did not run");
	pthread_join(t, NULL);
	waitpid(pid, NULL, 0);
	unlink(path);
	return !during;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "uring"))
		return probe_uring();
	if (argc == 2 && !strcmp(argv[1], "ofd"))
		return probe_ofd();
	fprintf(stderr, "usage: probe uring|ofd\n");
	return 2;
}
