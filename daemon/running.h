/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The serving daemon's settings, kept in the runtime directory for
 * mount -o remount (running.c): a remount cannot change them, so one that
 * names a setting is taken only when the value is the one in effect.
 */
#ifndef UFS_RUNNING_H
#define UFS_RUNNING_H

#include <stdbool.h>

#include "config.h"
#include "mount.h"

/*
 * Write what the daemon serving the mount at real (connection conn_id) runs
 * with: the effective settings, the -o it was given (settings), the options
 * the kernel holds the mount to.  Best effort (a daemon without a runtime
 * directory writes none: a remount naming a setting is then refused).
 */
void ufs_running_publish(const char *real, unsigned int conn_id, const char *source,
			 const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
			 const char *settings);
/* The daemon serving connection conn_id leaves: take its file away. */
void ufs_running_forget(const char *real, unsigned int conn_id);

/*
 * Every word of a remount's option list (optstr) that is not the kernel's
 * to apply (a daemon setting, config=, debug, nodiratime, and the kernel's
 * FUSE options such as user_id= or fsname=) must equal what the mount at
 * mountpoint (connection conn, super options super) runs with.  0, or 1
 * with one line on stderr naming the first that does not.
 */
int ufs_running_check(const char *mountpoint, long conn, const char *super, const char *optstr);

/* Is word one of list's comma-separated words (mountinfo's options, unescaped)? */
bool ufs_words_have(const char *list, const char *word);

#endif /* UFS_RUNNING_H */
