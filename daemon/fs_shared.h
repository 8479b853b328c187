/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the handlers share (fs_shared.c). */
#ifndef UFS_FS_SHARED_H
#define UFS_FS_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fuse_abi.h"

struct ufs_file;
struct ufs_fs;
struct ufs_inode;
struct ufs_req;

int ufs_reopen(struct ufs_fs *fs, struct ufs_inode *inode, int flags);
int ufs_dir_reopen(struct ufs_fs *fs, struct ufs_inode *inode);
int ufs_file_fd(struct ufs_fs *fs, struct ufs_file *file, bool write);
void ufs_file_fd_put(struct ufs_file *file, int fd);
int ufs_file_fd_keep(struct ufs_fs *fs, struct ufs_file *file);
int ufs_open_noatime(struct ufs_fs *fs, int dirfd, const char *name, int flags, mode_t mode);
int ufs_proc_name(const struct ufs_inode *inode, char *buf, size_t len);
void ufs_fill_attr(struct fuse_attr *attr, const struct stat *st);
void ufs_fill_entry(struct ufs_fs *fs, struct fuse_entry_out *e, const struct ufs_inode *inode,
		    const struct stat *st);
void ufs_fill_attr_out(struct ufs_fs *fs, struct fuse_attr_out *out, const struct ufs_inode *inode,
		       const struct stat *st);
/* How long the kernel may cache the inode's attributes, in seconds. */
double ufs_attr_timeout(struct ufs_fs *fs, const struct ufs_inode *inode);
double ufs_entry_timeout(struct ufs_fs *fs, const struct ufs_inode *inode);
double ufs_negative_timeout(struct ufs_fs *fs, const struct ufs_inode *parent);
bool ufs_replay_made(struct ufs_fs *fs, const struct ufs_req *req, int dir_fd, const char *name,
		     mode_t type, const struct stat *link_of);
int ufs_do_lookup(struct ufs_fs *fs, struct ufs_inode *parent, const char *name,
		  struct fuse_entry_out *e);
int ufs_kill_suidgid(struct ufs_fs *fs, const struct ufs_req *req, struct ufs_inode *inode,
		     const struct stat *st, bool may_fsetid);
void ufs_attr_stale(struct ufs_fs *fs, const struct ufs_inode *inode);
void ufs_umask_enter(struct ufs_fs *fs, uint32_t umask_in);
void ufs_umask_leave(struct ufs_fs *fs);
uint64_t ufs_timeout_sec(double t);
uint32_t ufs_timeout_nsec(double t);

#endif /* UFS_FS_SHARED_H */
