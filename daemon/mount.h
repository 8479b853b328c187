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
#include <sys/types.h>

#include "config.h"
#include "mount_keeper.h"

struct fuse_session;

struct ufs_mount_opts {
	char kernel[1024];	/* mount options for libfuse: ro, nosuid, fsname=... */
	char config[PATH_MAX];	/* config=FILE */
	bool has_config;
	bool noatime;		/* backing files are opened O_NOATIME */
	bool nodiratime;	/* backing directories are */
	bool suid;		/* set-id bits take effect at exec through the mount */
	bool nosymfollow;	/* MOUNT_ATTR_NOSYMFOLLOW, set after the mount */
	bool auto_unmount;	/* fusermount3 stays to unmount: mounted by a keeper */
	bool remount;		/* mount(8)'s -o remount: no daemon (remount.c) */
};

/*
 * Split an -o string (commas separate, "\," escapes a comma) into our
 * settings (applied to cfg with source -o), the config file, and mount
 * options for the kernel.  _netdev, nofail, noauto, x-systemd.* and other
 * fstab-only words pass quietly.  Returns 0 or -EINVAL with err set.
 */
int ufs_mount_opts_parse(const char *optstr, struct ufs_config *cfg, struct ufs_mount_opts *mo,
			 struct ufs_config_error *err);

/*
 * The same split, each word (unescaped, writable) to fn, which returns 0 to
 * go on; returns the first non-zero, or -EINVAL with err set.
 */
int ufs_mount_opts_each(const char *optstr, int (*fn)(char *word, void *arg), void *arg,
			struct ufs_config_error *err);

struct ufs_mount {
	struct fuse_session *se;
	int fd;			/* /dev/fuse, owned by libfuse's session (or ours: keeper) */
	struct ufs_mount_keeper keeper;	/* auto_unmount's (mount_keeper.h), no session */
	char mountpoint[PATH_MAX];	/* as given; "" once unmounted */
	char real[PATH_MAX];	/* its real path, as mountinfo spells it */
	unsigned int conn_id;	/* /sys/fs/fuse/connections/<id>: the device minor */
};

/* Mount source at mountpoint.  Returns 0 or a negative errno with err set. */
int ufs_mount(struct ufs_mount *m, const char *source, const char *mountpoint,
	      const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
	      struct ufs_config_error *err);

/*
 * The options the kernel holds the mount to, as one string (for the
 * hand-over record: a successor must serve the mount it finds with the
 * same ones).
 */
void ufs_mount_kernel_options(const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
			      char *buf, size_t len);

/* Unmount (idempotent); the kernel then ends the connection. */
void ufs_unmount(struct ufs_mount *m);

/*
 * The real path of a mount point, without looking at the mount point
 * itself (its parent resolved, its name kept): a successor must not send
 * its own mount a request before it serves.
 */
int ufs_mount_real_path(const char *path, char *real, size_t len);
/* The connection number of the topmost uringfs mount at real, or -1. */
long ufs_mount_conn_of(const char *real);
/* Same, if that mount was made by our euid (its user_id); else -1. */
long ufs_mount_ours(const char *real);
/*
 * The connection number of the mount fd is on, if that very mount (by its
 * mount id, not whatever is mounted above it) is a uringfs mount, else -1;
 * its super options (mountinfo's last field) into super and its own
 * options (the mount's flags: ro, nosuid, noatime ...) into opts, len
 * bytes each.
 */
long ufs_mount_conn_of_fd(int fd, char *super, char *opts, size_t len);

/*
 * Is the mount still in this namespace's mount table?  After the connection
 * ended, yes means the kernel aborted it under a live mount (a request
 * timeout, a write to the connection's abort file): every access then
 * fails with ENOTCONN until it is taken away.
 */
bool ufs_mount_listed(const struct ufs_mount *m);

/* Detach a mount whose connection is dead (umount2 MNT_DETACH or fusermount3 -uz). */
int ufs_mount_detach(struct ufs_mount *m);

/* Release libfuse's session and the descriptor. */
void ufs_mount_release(struct ufs_mount *m);

#endif /* UFS_MOUNT_H */
