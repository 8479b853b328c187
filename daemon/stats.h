/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control file's text (`uringfs --stats`, SIGUSR1, sd_notify STATUS=):
 * the workers' counters (counters.h) summed, and the daemon's state.
 */
#ifndef UFS_STATS_H
#define UFS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "counters.h"

struct ufs_daemon;

/* dst += src, field by field. */
void ufs_stats_sum(struct ufs_stats *dst, const struct ufs_stats *src);

/*
 * The `name value` lines of the control file and SIGUSR1; caller frees.
 * The requests in flight listed: every one if all, else only uid's (and
 * how many were withheld: slow.h).
 */
char *ufs_stats_text(struct ufs_daemon *d, bool all, uid_t uid, size_t *len);
/* Sum of all workers' counters. */
void ufs_stats_total(struct ufs_daemon *d, struct ufs_stats *total);
/* SIGUSR1: the stats lines to the log. */
void ufs_stats_log(struct ufs_daemon *d);

#endif /* UFS_STATS_H */
