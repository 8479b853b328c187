/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Mounting: the -o option string, and the mount itself through libfuse3
 * (mount(2) as root, fusermount3 for everyone else).  libfuse only mounts
 * and unmounts; the daemon reads INIT and every request itself.
 */
#ifndef UFS_MOUNT_H
#define UFS_MOUNT_H

#include <limits.h>
#include <stdbool.h>

#include "config.h"

struct fuse_session;

struct ufs_mount_opts {
	char kernel[1024];	/* mount options for libfuse: ro, nosuid, fsname=... */
	char config[PATH_MAX];	/* config=FILE */
	bool has_config;
};

/*
 * Split an -o string (commas separate, "\," escapes a comma) into our
 * settings (applied to cfg with source -o), the config file, and mount
 * options for the kernel.  _netdev, nofail, noauto, x-systemd.* and other
 * fstab-only words pass quietly.  Returns 0 or -EINVAL with err set.
 */
int ufs_mount_opts_parse(const char *optstr, struct ufs_config *cfg, struct ufs_mount_opts *mo,
			 struct ufs_config_error *err);

struct ufs_mount {
	struct fuse_session *se;
	int fd;			/* /dev/fuse, owned by libfuse's session */
	char mountpoint[PATH_MAX];
};

/* Mount source at mountpoint.  Returns 0 or a negative errno with err set. */
int ufs_mount(struct ufs_mount *m, const char *source, const char *mountpoint,
	      const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
	      struct ufs_config_error *err);

/* Unmount (idempotent); the kernel then ends the connection. */
void ufs_unmount(struct ufs_mount *m);

/* Release libfuse's session and the descriptor. */
void ufs_mount_release(struct ufs_mount *m);

#endif /* UFS_MOUNT_H */
