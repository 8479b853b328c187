/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The file system's side of an open file (fs_file.c); the table is file_table.h. */
#ifndef UFS_FS_FILE_H
#define UFS_FS_FILE_H

#include <stdbool.h>

struct ufs_fs;
struct ufs_file;

/* The open-file table fs->files, wired to the hand-over record and ufs_file_free. */
int ufs_fs_files_init(struct ufs_fs *fs);
/* Closes the descriptor and drops the file's inode reference. */
void ufs_file_free(struct ufs_fs *fs, struct ufs_file *file);
void ufs_file_pin(struct ufs_fs *fs, struct ufs_file *file, bool prepaid);

#endif /* UFS_FS_FILE_H */
