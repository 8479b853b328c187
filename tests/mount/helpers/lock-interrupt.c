// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: F_SETLKW (or flock) on a file whose lock another process
 * holds, again and again, each wait interrupted by SIGALRM (no SA_RESTART)
 * from an interval timer: the first 10 us to 3 ms into the call, at any
 * moment of its way to the daemon, then every 2 ms until the call returns,
 * as a real program's timer would (one that comes before the call sleeps
 * is followed by another).  SIGALRM is process-directed, and the process
 * has one thread, so the waiting thread is the one signalled.
 *
 *   lock-interrupt FILE SECONDS [flock]
 *
 * Prints "N waits: E EINTR, slowest MS ms" and exits 0 when every wait
 * ended with EINTR within 2 s; 1 as soon as one did not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void on_signal(int sig)
{
	(void)sig;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void alarm_set(long first_us, long every_us)
{
	struct itimerval it = {
		.it_value = { .tv_usec = first_us },
		.it_interval = { .tv_usec = every_us },
	};

	setitimer(ITIMER_REAL, &it, NULL);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */
	unsigned int waits = 0, seed = 1;
	double end, slowest = 0;
	bool use_flock;

	if (argc < 3) {
		fprintf(stderr, "usage: lock-interrupt FILE SECONDS [flock]\n");
		return 2;
	}
	use_flock = argc > 3 && !strcmp(argv[3], "flock");
	sigaction(SIGALRM, &sa, NULL);
	end = now_ms() + atof(argv[2]) * 1e3;
	while (now_ms() < end) {
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		int fd = open(argv[1], O_RDWR), ret, err;
		double start, took;

		if (fd < 0) {
			perror(argv[1]);
			return 1;
		}
		start = now_ms();
		alarm_set(10 + rand_r(&seed) % 3000, 2000);
		ret = use_flock ? flock(fd, LOCK_EX) : fcntl(fd, F_SETLKW, &fl);
		err = errno;
		alarm_set(0, 0);
		took = now_ms() - start;
		close(fd);
		waits++;
		if (took > slowest)
			slowest = took;
		if (!ret) {
			printf("wait %u: got the lock, which another process holds\n", waits);
			return 1;
		}
		if (took > 2000 || err != EINTR) {
			printf("wait %u: %s after %.0f ms\n", waits, strerror(err), took);
			return 1;
		}
	}
	printf("%u waits: %u EINTR, slowest %.1f ms\n", waits, waits, slowest);
	return 0;
}
