/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * auto_unmount's mount, made from a keeper process that holds fusermount3's
 * socket for as long as the daemon lives (mount_keeper.c says why).
 */
#ifndef UFS_MOUNT_KEEPER_H
#define UFS_MOUNT_KEEPER_H
#include <stddef.h>
#include <sys/types.h>

struct fuse_session;

/* The keeper of one mount; owned by the main thread (struct ufs_mount). */
struct ufs_mount_keeper {
	pid_t pid; /* 0: none */
	int sock; /* ours of the socket with it: its end of the daemon's life */
};

/*
 * fuse_session_mount(se, mountpoint) in a keeper child.  Returns the
 * /dev/fuse descriptor (ours to close), or -1 with why set to libfuse's
 * error lines (or the reason there is no keeper), len bytes, and no keeper.
 */
int ufs_mount_keeper_start(struct ufs_mount_keeper *k, struct fuse_session *se,
			   const char *mountpoint, char *why, size_t len);
/*
 * Let the keeper go (it exits, and fusermount3, finding its socket closed,
 * unmounts whatever the daemon left mounted); reaped if it is our child.
 */
void ufs_mount_keeper_release(struct ufs_mount_keeper *k);
#endif
