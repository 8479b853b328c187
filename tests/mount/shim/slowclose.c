// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for t_faults: what the daemon's RELEASE closes takes
 * 50 ms, as a close that flushes to a slow server or a worker the
 * scheduler set aside would: its close() of a file opened for I/O (not
 * O_PATH) whose name starts with "slowclose-", and every
 * FUSE_DEV_IOC_BACKING_CLOSE (a passed-through file keeps only its backing
 * id).  A RELEASE is then still being served when the caller's next
 * request arrives: an UNLINK that another worker answers before that
 * RELEASE is done leaves the file's space in use after unlink() returned.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int slow(int fd)
{
	char link[64], path[4096];
	const char *base;
	ssize_t n;
	int flags = fcntl(fd, F_GETFL);

	if (flags < 0 || (flags & O_PATH))
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	base = strrchr(path, '/');
	return base && !strncmp(base + 1, "slowclose-", 10);
}

/* _IOW(229, 2, uint32_t): Linux 6.9's uapi, newer than bookworm's headers */
#define BACKING_CLOSE 0x4004e502ul

static void pause_50ms(void)
{
	const struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };

	nanosleep(&pause, NULL);
}

int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (slow(fd))
		pause_50ms();
	return real(fd);
}

int ioctl(int fd, unsigned long request, ...)
{
	int (*real)(int, unsigned long, ...) =
		(int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request == BACKING_CLOSE)
		pause_50ms();
	return real(fd, request, arg);
}
