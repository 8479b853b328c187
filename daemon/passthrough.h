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
struct ufs_ident;
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

/* The daemon's kernel passthrough (fs->pt): set before the first request. */
struct ufs_passthrough {
	enum ufs_passthrough_state state;	/* changes only ON -> EPERM, atomically */
	int dev_fd;			/* /dev/fuse, for BACKING_OPEN and BACKING_CLOSE */
	uint64_t backing_ids;		/* registered now; atomic */
};

void ufs_passthrough_init(struct ufs_passthrough *pt);
/*
 * Whether BACKING_OPEN works on pt->dev_fd: a probe with dir_fd, a
 * directory (refused after the capability check).  Sets and returns the
 * state; *why when it is not UFS_PT_ON.
 */
enum ufs_passthrough_state ufs_passthrough_probe(struct ufs_passthrough *pt, int dir_fd,
						 const char **why);
/* BACKING_OPEN said EPERM: the capability went (ON -> EPERM, logged once). */
void ufs_passthrough_lost_capability(struct ufs_passthrough *pt);
const char *ufs_passthrough_state_name(enum ufs_passthrough_state state);
const char *ufs_pt_refusal_name(enum ufs_pt_refusal why);

/* BACKING_OPEN of fd as who: the new id, or -errno. */
int ufs_backing_open(struct ufs_passthrough *pt, int fd, const struct ufs_ident *who);
void ufs_backing_close(struct ufs_passthrough *pt, int id);
/* A predecessor's backing id, which the kernel still holds, counted again. */
void ufs_backing_adopted(struct ufs_passthrough *pt);
enum ufs_backing_fs ufs_backing_fs_of(int fd);
/* What keeps the backing file fd off passthrough, or UFS_PT_REFUSED_COUNT for nothing. */
enum ufs_pt_refusal ufs_backing_refusal(int fd);

#endif /* UFS_PASSTHROUGH_H */
