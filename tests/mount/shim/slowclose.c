// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for t_faults: the daemon's RELEASE takes 50 ms longer
 * at each of its steps, as a close that flushes to a slow server or a
 * worker the scheduler set aside would: its read() of a RELEASE from
 * /dev/fuse (spinning, so the thread stays runnable as a preempted one
 * does, before it serves anything), its close() of a file opened for
 * I/O (not O_PATH) whose name starts with "slowclose-", and every
 * FUSE_DEV_IOC_BACKING_CLOSE (a passed-through file keeps only its backing
 * id).  A RELEASE is then still on its way when the caller's next request
 * arrives: an UNLINK that another worker answers before that RELEASE is
 * done leaves the file's space in use after unlink() returned.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
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

static void spin_50ms(void)
{
	struct timespec start, now;

	clock_gettime(CLOCK_MONOTONIC, &start);
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while ((now.tv_sec - start.tv_sec) * 1000000000L + now.tv_nsec - start.tv_nsec <
	       50 * 1000 * 1000L);
}

int close(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "close");

	if (slow(fd))
		pause_50ms();
	return real(fd);
}

#define FUSE_RELEASE 18

static int is_fuse_device(int fd)
{
	char link[64], path[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = '\0';
	return !strcmp(path, "/dev/fuse");
}

/* struct fuse_in_header: len, then opcode (both uint32_t). */
ssize_t read(int fd, void *buf, size_t count)
{
	ssize_t (*real)(int, void *, size_t) =
		(ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	ssize_t n = real(fd, buf, count);
	uint32_t opcode;

	if (n >= 8) {
		memcpy(&opcode, (char *)buf + 4, sizeof(opcode));
		if (opcode == FUSE_RELEASE && is_fuse_device(fd))
			spin_50ms();
	}
	return n;
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
