/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data path of each open (io_path.c): kernel passthrough or the
 * daemon's, per inode (passthrough.h has the kernel's rule).
 */
#ifndef UFS_IO_PATH_H
#define UFS_IO_PATH_H

#include <stdint.h>

#include "passthrough.h"

struct ufs_fs;
struct ufs_file;
struct ufs_req;

/*
 * After INIT: state from the negotiation and a BACKING_OPEN probe on
 * dev_fd.  why is set when the state is not UFS_PT_ON.
 */
enum ufs_passthrough_state ufs_io_path_start(struct ufs_fs *fs, int dev_fd, const char **why);

/*
 * Chooses the data path of a new open of file (file->fd open with the
 * client's flags) and counts it.  Sets the FOPEN_* flags of the path in
 * *open_flags and the backing id in *backing_id.  Returns 0, or -ETXTBSY
 * when the kernel's per-inode rule leaves no path that is safe.
 */
int ufs_io_path_open(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
		     uint32_t *open_flags, int32_t *backing_id);
/* The file's open is gone: the inode's last passthrough open closes its backing id. */
void ufs_io_path_release(struct ufs_fs *fs, struct ufs_file *file);

/* A predecessor's open file on the path the kernel holds it on (restore.c). */
int ufs_io_path_restore(struct ufs_fs *fs, struct ufs_file *file, enum ufs_io_mode mode,
			int backing_id);

#endif /* UFS_IO_PATH_H */
