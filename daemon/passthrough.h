/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Kernel passthrough: the kernel reads and writes an open file's backing
 * file itself (FOPEN_PASSTHROUGH with a backing id from BACKING_OPEN).
 *
 * The kernel's rule (fs/fuse/iomode.c: fuse_file_io_open): while an inode
 * has a passthrough open, every open of it must be passthrough with the same
 * backing file, and while it has a cached (daemon path) open, none may be.
 * So the path is chosen per inode at its first open and kept until its last
 * open is released.
 */
#ifndef UFS_PASSTHROUGH_H
#define UFS_PASSTHROUGH_H

#include <stdint.h>

#include "io_mode.h"

struct ufs_fs;
struct ufs_file;
struct ufs_req;

/* What the daemon can do with passthrough, for the log and stats. */
enum ufs_passthrough_state {
	UFS_PT_OFF, /* not negotiated, or switched off by the settings */
	UFS_PT_ON,
	UFS_PT_EPERM, /* negotiated, but BACKING_OPEN needs CAP_SYS_ADMIN */
};

/* Why an open that could have been passed through was not (stats). */
enum ufs_pt_refusal {
	UFS_PT_REFUSED_EPERM, /* no CAP_SYS_ADMIN */
	UFS_PT_REFUSED_ELOOP, /* backing file system too deeply stacked */
	UFS_PT_REFUSED_MIXED, /* the inode has daemon-path opens */
	UFS_PT_REFUSED_ATTR, /* append-only or immutable backing file */
	UFS_PT_REFUSED_SETID, /* set-id bits: the daemon clears them per caller */
	UFS_PT_REFUSED_PSEUDO, /* proc, sysfs and the like */
	UFS_PT_REFUSED_OTHER,
	UFS_PT_REFUSED_COUNT,
};

/*
 * After INIT: state from the negotiation and a BACKING_OPEN probe on
 * dev_fd.  why is set when the state is not UFS_PT_ON.
 */
enum ufs_passthrough_state ufs_passthrough_start(struct ufs_fs *fs, int dev_fd, const char **why);
const char *ufs_passthrough_state_name(enum ufs_passthrough_state state);
const char *ufs_pt_refusal_name(enum ufs_pt_refusal why);

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

#endif /* UFS_PASSTHROUGH_H */
