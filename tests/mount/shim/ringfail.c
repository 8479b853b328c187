// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * LD_PRELOAD shim for t_mount: makes liburing's ring set-up fail the way a
 * kernel with io_uring disabled, or short of memory, would.
 *
 *   UFS_RINGFAIL=all      every io_uring_queue_init*() fails with EPERM
 *                         (as with kernel.io_uring_disabled=2)
 *   UFS_RINGFAIL=workers  rings of 8 entries or more fail with ENOMEM: the
 *                         probe works, the workers' rings do not
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct io_uring;
struct io_uring_params;

static int ringfail(unsigned int entries)
{
	const char *mode = getenv("UFS_RINGFAIL");

	if (!mode)
		return 0;
	if (!strcmp(mode, "all"))
		return -EPERM;
	if (!strcmp(mode, "workers") && entries >= 8)
		return -ENOMEM;
	return 0;
}

int io_uring_queue_init_params(unsigned int entries, struct io_uring *ring,
			       struct io_uring_params *p)
{
	int (*real)(unsigned int, struct io_uring *, struct io_uring_params *);
	int ret = ringfail(entries);

	if (ret)
		return ret;
	real = (typeof(real))dlsym(RTLD_NEXT, "io_uring_queue_init_params");
	return real(entries, ring, p);
}

int io_uring_queue_init(unsigned int entries, struct io_uring *ring, unsigned int flags)
{
	int (*real)(unsigned int, struct io_uring *, unsigned int);
	int ret = ringfail(entries);

	if (ret)
		return ret;
	real = (typeof(real))dlsym(RTLD_NEXT, "io_uring_queue_init");
	return real(entries, ring, flags);
}
