/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Extended attributes and ACLs (fs_xattr.c). */
#ifndef UFS_FS_XATTR_H
#define UFS_FS_XATTR_H

struct ufs_config;
struct ufs_conn;

const char *ufs_acls_unenforced(const struct ufs_config *cfg, const struct ufs_conn *conn);

#endif /* UFS_FS_XATTR_H */
