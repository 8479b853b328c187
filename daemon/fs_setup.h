/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The file system's state (struct ufs_fs, fs.h), opened and closed together
 * (fs_setup.c).  fs.h itself holds types only, so that the modules it is
 * made of can include it without a circle through the one that sets them up.
 */
#ifndef UFS_FS_SETUP_H
#define UFS_FS_SETUP_H

struct ufs_config;
struct ufs_fs;
struct ufs_record;

int ufs_fs_init(struct ufs_fs *fs, const struct ufs_config *cfg, const char *source);
void ufs_fs_destroy(struct ufs_fs *fs);
int ufs_fs_reopen_proc(struct ufs_fs *fs);
/* Where the hand-over record keeps node and file records for a successor. */
void ufs_fs_set_record(struct ufs_fs *fs, struct ufs_record *record);

#endif /* UFS_FS_SETUP_H */
