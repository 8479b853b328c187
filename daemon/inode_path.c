// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A node id's path, as the daemon knows it: its O_PATH descriptor's
 * /proc/self/fd link.  The store keeps no names (a node's parent only, for
 * the kernel's export operations), and walking parents would need a name
 * per hop; the link is the kernel's own d_path of the descriptor, which
 * reads no backing block, so it stays cheap beside a hung backing file
 * system.  It is the backing path (inside SOURCE), and says " (deleted)"
 * after an unlink.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "confine.h"
#include "inode.h"
#include "inode_path.h"

int ufs_inode_path(struct ufs_inode_store *inodes, uint64_t nodeid, char *buf, size_t size)
{
	struct ufs_inode *inode;
	char name[32];
	ssize_t n = -ENOENT;

	if (size < 2)
		return -ENAMETOOLONG;
	/* Under inode_lock the descriptor cannot be closed or evicted under us. */
	pthread_mutex_lock(&inodes->inode_lock);
	inode = ufs_inode_find_by_id_locked(inodes, nodeid);
	if (inode && !inode->control && inode->fd >= 0) {
		/* The confinement's /proc/self/fd, as its own checks read it (confine.c). */
		snprintf(name, sizeof(name), "%d", inode->fd);
		n = readlinkat(inodes->confine->proc_fd, name, buf, size - 1);
		if (n < 0)
			n = -errno;
		else if ((size_t)n == size - 1)
			n = -ENAMETOOLONG;
	}
	pthread_mutex_unlock(&inodes->inode_lock);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}
