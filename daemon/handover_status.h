/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Why nobody serves a mount (handover.h): a successor that could not start
 * leaves a line for `uringfs --stats` (which must not touch the mount then),
 * and the daemon that serves it again takes it away (why NULL).
 */
#ifndef UFS_HANDOVER_STATUS_H
#define UFS_HANDOVER_STATUS_H

#include <stdbool.h>
#include <stddef.h>

void ufs_handover_status(const char *real, const char *why);
int ufs_handover_status_read(const char *mountpoint, char *buf, size_t len);

/*
 * "<runtime dir>/<kind>-<uid>-<hash of real>" in path: the runtime
 * directory is /run/uringfs (root) or $XDG_RUNTIME_DIR/uringfs, made if
 * make_dir, and used only if it is ours alone.  0 or a negative errno
 * (-ENAMETOOLONG: path too short).
 */
int ufs_handover_runtime_name(const char *real, const char *kind, char *path, size_t len,
			      bool make_dir);

#endif /* UFS_HANDOVER_STATUS_H */
