// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The operations the file system answers without work: DESTROY (nothing is
 * kept per connection that the daemon's own shutdown does not end), and POLL
 * and BMAP, which it does not do (ENOSYS: the kernel remembers and stops
 * asking).
 */
#include <errno.h>

#include "fs.h"

ssize_t ufs_op_destroy(struct ufs_fs *fs, struct ufs_req *req)
{
	(void)fs;
	(void)req;
	return 0;
}

ssize_t ufs_op_bmap(struct ufs_fs *fs, struct ufs_req *req)
{
	(void)fs;
	(void)req;
	return -ENOSYS; /* block maps are for fuseblk */
}

ssize_t ufs_op_poll(struct ufs_fs *fs, struct ufs_req *req)
{
	(void)fs;
	(void)req;
	return -ENOSYS; /* the kernel then treats files as always ready */
}
