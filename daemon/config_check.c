// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The checks across keys: settings each valid alone that together would
 * not work, or would let a user do through the mount what they cannot do
 * natively.  One line names both keys; nothing is guessed.
 */
#include <errno.h>

#include "config.h"
#include "config_check.h"

/*
 * io_path names the data path; zero_copy is the older switch for one of
 * them.  They must agree, and from here on zero_copy says what io_path
 * decided, so the transport reads one switch.
 */
static int io_path_resolve(struct ufs_config *cfg, struct ufs_config_error *err)
{
	const char *name = ufs_io_path_name(cfg->io_path);

	switch (cfg->io_path) {
	case UFS_IO_PATH_AUTO:
		return 0;
	case UFS_IO_PATH_ZERO_COPY:
		if (cfg->io_uring == UFS_SWITCH_OFF) {
			ufs_config_error_set(err, "io_path=zero_copy needs io_uring (io_uring=off given)");
			return -EINVAL;
		}
		if (cfg->zero_copy == UFS_SWITCH_OFF) {
			ufs_config_error_set(err, "io_path=zero_copy contradicts zero_copy=off");
			return -EINVAL;
		}
		cfg->zero_copy = UFS_SWITCH_ON;
		return 0;
	case UFS_IO_PATH_PASSTHROUGH:
		/* The kernel turns passthrough off with the writeback cache (process_init_reply). */
		if (cfg->writeback_cache) {
			ufs_config_error_set(err, "io_path=passthrough cannot be had with writeback_cache=on "
						  "(the kernel allows one or the other)");
			return -EINVAL;
		}
		break;
	}
	if (cfg->zero_copy == UFS_SWITCH_ON) {
		ufs_config_error_set(err, "io_path=%s contradicts zero_copy=on", name);
		return -EINVAL;
	}
	cfg->zero_copy = UFS_SWITCH_OFF;
	return 0;
}

int ufs_config_validate(struct ufs_config *cfg, struct ufs_config_error *err)
{
	int ret;

	if (cfg->max_write % 4096) {
		ufs_config_error_set(err, "max_write=%u: must be a multiple of 4096", cfg->max_write);
		return -EINVAL;
	}
	if (cfg->request_timeout && cfg->request_timeout < 15) {
		/* The kernel checks every 15 s and never times out sooner. */
		ufs_config_error_set(err, "request_timeout=%u: must be 0 (off) or at least 15 seconds",
			  cfg->request_timeout);
		return -EINVAL;
	}
	if (cfg->bufpool_buffers && cfg->bufpool_buffers < cfg->queue_depth) {
		ufs_config_error_set(err,
			  "bufpool_buffers=%u: must be 0 (= queue_depth) or at least queue_depth=%u",
			  cfg->bufpool_buffers, cfg->queue_depth);
		return -EINVAL;
	}
	/*
	 * Without default_permissions every handler but the creating ones runs
	 * with the daemon's rights, and with allow_other every user would get
	 * them.  The kernel's checks are the ones that match the backing modes.
	 */
	if (cfg->allow_other && !cfg->default_permissions) {
		ufs_config_error_set(err, "allow_other with default_permissions=off would let every user act "
			       "with the daemon's rights: refused");
		return -EINVAL;
	}
	/*
	 * Only the kernel can enforce POSIX ACLs (fs_xattr.c), of SOURCE or of
	 * whatever is mounted below it, now or later: other users need it to.
	 */
	if (cfg->allow_other && (!cfg->posix_acl || !cfg->xattr)) {
		ufs_config_error_set(err, "allow_other with %s would leave POSIX ACLs unenforced: refused",
			  !cfg->posix_acl ? "posix_acl=off" : "xattr=off");
		return -EINVAL;
	}
	/*
	 * The kernel's request timeout covers a lock wait like any request: a
	 * SETLKW held longer than the timeout would abort the whole mount.
	 */
	if (cfg->request_timeout && (cfg->posix_locks || cfg->flock_locks)) {
		ufs_config_error_set(err, "request_timeout=%u with %s=on: a lock wait longer than the timeout "
			       "would abort the mount; use request_timeout=0 or %s=off",
			  cfg->request_timeout, cfg->posix_locks ? "posix_locks" : "flock_locks",
			  cfg->posix_locks ? "posix_locks" : "flock_locks");
		return -EINVAL;
	}
	ret = io_path_resolve(cfg, err);
	if (ret)
		return ret;
	if (cfg->zero_copy == UFS_SWITCH_ON && cfg->io_uring == UFS_SWITCH_OFF) {
		ufs_config_error_set(err, "zero_copy=on needs io_uring (io_uring=off given)");
		return -EINVAL;
	}
	if (cfg->copy_file_range == UFS_CFR_RING && cfg->io_uring == UFS_SWITCH_OFF) {
		ufs_config_error_set(err, "copy_file_range=ring needs io_uring (io_uring=off given)");
		return -EINVAL;
	}
	return 0;
}
