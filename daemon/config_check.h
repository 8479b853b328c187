/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The checks across keys (config_check.c). */
#ifndef UFS_CONFIG_CHECK_H
#define UFS_CONFIG_CHECK_H

struct ufs_config;
struct ufs_config_error;

/*
 * After every source is read: 0, or -EINVAL with err naming the keys.
 * Resolves io_path into zero_copy, so the transport reads one switch.
 */
int ufs_config_validate(struct ufs_config *cfg, struct ufs_config_error *err);

#endif /* UFS_CONFIG_CHECK_H */
