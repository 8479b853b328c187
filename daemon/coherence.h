/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The kernel's caches kept coherent with SOURCE (coherence.c): a watcher
 * thread reads fanotify's reports of every change on SOURCE's file system
 * and invalidates what the kernel caches of it, so names, attributes and
 * failed lookups can be cached for long (the `cache` setting).
 */
#ifndef UFS_COHERENCE_H
#define UFS_COHERENCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "coherence_state.h"

struct ufs_config;
struct ufs_inode_store;

const char *ufs_coherence_state_name(enum ufs_coherence_state s);
void ufs_coherence_init(struct ufs_coherence *c);
/*
 * Before the mount: is coherence possible here (policy, file system,
 * handles, fanotify)?  Sets the state and the timeouts.  -EOPNOTSUPP if
 * cache=coherent and it is not (why says why).
 */
int ufs_coherence_open(struct ufs_coherence *c, const struct ufs_config *cfg,
		       struct ufs_inode_store *inodes, int root_fd, dev_t dev);
/*
 * Once the connection is up (minor: its protocol), before the first
 * request: starts the watcher.  -EOPNOTSUPP as above.  Logs the outcome.
 */
int ufs_coherence_start(struct ufs_coherence *c, uint32_t minor, bool inherited,
			ufs_coherence_notify_fn notify, void *arg);
/* The timeouts for a reply about an object on dev. */
const struct ufs_cache_timeouts *ufs_coherence_timeouts(const struct ufs_coherence *c, dev_t dev);
bool ufs_coherence_active(const struct ufs_coherence *c);
/*
 * Hold the watcher between notifications (before the workers pause: a
 * notification can wait on a lock that only a served request frees), and
 * let it go on.
 */
void ufs_coherence_hold(struct ufs_coherence *c);
void ufs_coherence_release(struct ufs_coherence *c);
/*
 * While an inode has writable passthrough opens the kernel caches neither
 * its attributes nor its pages (fs_shared.c, passthrough): its writes need
 * no event, and a writer's every write would raise one.  quiet: ignore
 * FAN_MODIFY and FAN_CLOSE_WRITE on the file at (dirfd, path), or report
 * them again.  Called under
 * the inode's lock, so that the two cannot cross.
 */
void ufs_coherence_quiet(struct ufs_coherence *c, int dirfd, const char *path, bool quiet);
/* Stop the watcher and close the watch (after the workers saw the end). */
void ufs_coherence_stop(struct ufs_coherence *c);

#endif /* UFS_COHERENCE_H */
