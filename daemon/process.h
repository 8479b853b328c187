/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon as a process (process.c).
 */
#ifndef UFS_PROCESS_H
#define UFS_PROCESS_H

#include <signal.h>
#include <stdbool.h>

/*
 * Open files and cached inode descriptors (see inode.c) count against
 * RLIMIT_NOFILE: take every descriptor the hard limit allows.
 */
void ufs_process_raise_fd_limit(void);

/*
 * Block the signals the main loop reads (set), for every thread created
 * later, and install the workers' wake-up signal.  0 or -EINVAL.
 */
int ufs_process_block_signals(sigset_t *set);

/*
 * Detach: fork, and the parent waits until the child reports the mount
 * ready or failed (ufs_process_detach_done), so `uringfs SRC MNT` returns
 * only once MNT serves.  Returns 0 in the child, with *ready_fd to report on.
 */
int ufs_process_detach(int *ready_fd);
/*
 * Report status (0: serving) to the waiting parent (ready_fd < 0: not
 * detached); on success stdio goes to /dev/null, stderr only unless
 * keep_stderr (under systemd it is the journal).
 */
void ufs_process_detach_done(int ready_fd, int status, bool keep_stderr);

#endif /* UFS_PROCESS_H */
