/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration's ini file: read into a struct ufs_config (config.h)
 * key by key.
 */
#ifndef UFS_CONFIG_FILE_H
#define UFS_CONFIG_FILE_H

#include "config.h"

/*
 * Load an ini file.  Returns 0, -ENOENT if the file does not exist, or
 * -EINVAL with err = "FILE:LINE: what is wrong".
 */
int ufs_config_load_file(struct ufs_config *cfg, const char *path, struct ufs_config_error *err);

#endif /* UFS_CONFIG_FILE_H */
