/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's parts made at start-up (main.c's ladder): SOURCE's file
 * system with its upcalls, the export store, the workers' slots.
 */
#ifndef UFS_DAEMON_START_H
#define UFS_DAEMON_START_H

#include <stdbool.h>

struct ufs_daemon;

/* Open SOURCE (ufs_fs_init) with the file system's upcalls wired to d. */
int ufs_daemon_fs_open(struct ufs_daemon *d);
int ufs_daemon_store_open(struct ufs_daemon *d);
void ufs_daemon_store_load(struct ufs_daemon *d, bool inherited);
/* The coherence watcher (coherence.h), once the connection is up. */
int ufs_daemon_cache_start(struct ufs_daemon *d, bool inherited);
/* The inode store's bound (inode_limit) once serving, and stopping it. */
void ufs_daemon_prune_start(struct ufs_daemon *d);
void ufs_daemon_prune_stop(struct ufs_daemon *d);
/* Before an unmount: no notification is written to the connection after it. */
void ufs_daemon_notifiers_quiesce(struct ufs_daemon *d);
/* The workers' slots and CPUs, before any starts. */
int ufs_daemon_workers_alloc(struct ufs_daemon *d);

#endif /* UFS_DAEMON_START_H */
