// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The FUSE-over-io_uring transport (being written): until it lands, the
 * daemon never accepts FUSE_OVER_IO_URING and serves over /dev/fuse.
 */
#include <errno.h>

#include "daemon.h"
#include "uring.h"

bool ufs_uring_supported(void)
{
	return false;
}

int ufs_uring_start(struct ufs_daemon *d)
{
	(void)d;
	return -EOPNOTSUPP;
}

void ufs_uring_stop(struct ufs_daemon *d)
{
	(void)d;
}

void ufs_uring_force_stop(struct ufs_daemon *d)
{
	(void)d;
}
