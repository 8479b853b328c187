/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control file's `name value` text in Prometheus's text format
 * (`uringfs --stats --format=prometheus`).
 */
#ifndef UFS_STATS_PROM_H
#define UFS_STATS_PROM_H

#include <stdio.h>

int ufs_stats_prometheus(const char *text, const char *mountpoint, FILE *out);

#endif /* UFS_STATS_PROM_H */
