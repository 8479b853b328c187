/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which way copies run (copy_probe.c): the configured copy_file_range mode
 * against what the kernel can do; the room itself is copy.h.
 */
#ifndef UFS_COPY_PROBE_H
#define UFS_COPY_PROBE_H

#include <stdbool.h>

#include "config.h"

/* The mode to use; ring only when ring_ok (the transport can and the self-test passed). */
enum ufs_cfr_mode ufs_copy_mode_resolve(enum ufs_cfr_mode configured, bool ring_ok);

/*
 * Probe the kernel for IORING_OP_COPY_FILE_RANGE and confirm it by copying
 * a few bytes between two memory files.  Returns 0 when confirmed, else a
 * negative errno with *why set.
 */
int ufs_copy_ring_selftest(const char **why);

#endif /* UFS_COPY_PROBE_H */
