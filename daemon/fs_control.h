/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The stats control file, if configured and looked up (fs_control.c). */
#ifndef UFS_FS_CONTROL_H
#define UFS_FS_CONTROL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct ufs_file;
struct ufs_fs;
struct ufs_inode;
struct ufs_req;

bool ufs_is_control_name(struct ufs_fs *fs, const struct ufs_inode *parent, const char *name);
struct ufs_inode *ufs_control_inode(struct ufs_fs *fs);
void ufs_control_stat(struct ufs_fs *fs, struct stat *st);
int ufs_control_init(struct ufs_fs *fs);
/*
 * file (the control file's, file->uid its opener) counted and given its
 * snapshot: 0, or -EMFILE / -ENFILE when its opener is an ordinary user
 * past the bounds (control_opens.h).  At open and at a hand-over's
 * restore; ufs_file_free undoes it (file->control_counted).
 */
int ufs_control_file_fill(struct ufs_fs *fs, struct ufs_file *file);
ssize_t ufs_control_open(struct ufs_fs *fs, struct ufs_req *req, uint32_t flags);
ssize_t ufs_control_read(struct ufs_fs *fs, struct ufs_req *req, struct ufs_file *file,
			 uint64_t off, uint32_t size);

#endif /* UFS_FS_CONTROL_H */
