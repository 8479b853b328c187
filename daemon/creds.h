/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-request credentials (creds.c): creating calls run as the caller, and
 * whose limits a call meets.
 */
#ifndef UFS_CREDS_H
#define UFS_CREDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ident.h"

struct ufs_file;
struct ufs_fs;
struct ufs_req;

#define UFS_CREDS_INLINE_GROUPS 32
struct ufs_creds {
	bool switched;
	bool strip_setid;		/* a new inode gets no set-id bits (not root) */
	uid_t uid;
	gid_t gid;
	/* the caller's groups while they are read: inline_groups, or the heap */
	gid_t *groups;
	size_t groups_cap;
	gid_t inline_groups[UFS_CREDS_INLINE_GROUPS];
	uint64_t caps;			/* the caller's CapEff, once read */
	bool caps_read;
	struct ufs_ident_saved ident;	/* CAP_SYS_RESOURCE dropped */
};
int ufs_creds_enter(struct ufs_fs *fs, const struct ufs_req *req, struct ufs_creds *saved);
void ufs_creds_leave(struct ufs_creds *saved);
bool ufs_caller_in_group(const struct ufs_req *req, gid_t gid);
/* The mode a creating call may give its new inode. */
mode_t ufs_creds_mode(const struct ufs_creds *c, mode_t mode);
/*
 * Whose limits a call of req meets: its caller's, or with file (a write
 * from the page cache, FUSE_WRITE_CACHE, or one with no caller) that
 * file's opener's.
 */
void ufs_ident_of(struct ufs_fs *fs, const struct ufs_req *req, const struct ufs_file *file,
		  struct ufs_ident *who);

#endif /* UFS_CREDS_H */
