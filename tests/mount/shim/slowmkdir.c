// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for t_latency: the daemon's mkdirat() of a name that
 * starts with "slowmkdir-" takes 300 ms longer, as a call to a slow or
 * hung backing file system would; every other mkdirat() is untouched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

int mkdirat(int dirfd, const char *name, mode_t mode)
{
	static int (*real)(int, const char *, mode_t);
	const struct timespec pause = { .tv_nsec = 300 * 1000 * 1000 };

	if (!real)
		real = (int (*)(int, const char *, mode_t))dlsym(RTLD_NEXT, "mkdirat");
	if (!strncmp(name, "slowmkdir-", 10))
		nanosleep(&pause, NULL);
	return real(dirfd, name, mode);
}
