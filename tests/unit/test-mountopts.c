// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: -o option strings as fstab and mount.fuse3 pass them.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "mount.h"
#include "tap.h"

static int parse(const char *opts, struct ufs_config *cfg, struct ufs_mount_opts *mo,
		 struct ufs_config_error *err)
{
	ufs_config_defaults(cfg);
	memset(mo, 0, sizeof(*mo));
	memset(err, 0, sizeof(*err));
	return ufs_mount_opts_parse(opts, cfg, mo, err);
}

int main(void)
{
	struct ufs_config cfg;
	struct ufs_mount_opts mo;
	struct ufs_config_error err;

	is_int(parse("workers=2,io_uring=off", &cfg, &mo, &err), 0, "settings as -o");
	is_int(cfg.workers, 2, "workers=2");
	is_int(cfg.io_uring, UFS_SWITCH_OFF, "io_uring=off");
	is_int(cfg.source[0] == UFS_SRC_DEFAULT, 1, "log_level untouched keeps its source");

	is_int(parse("defaults,allow_other,config=/etc/uringfs/x.conf,_netdev,nofail,"
		     "x-systemd.automount,noauto",
		     &cfg, &mo, &err),
	       0, "an fstab option list");
	ok(cfg.allow_other, "allow_other is ours");
	ok(mo.has_config && !strcmp(mo.config, "/etc/uringfs/x.conf"), "config= recorded");
	is_str(mo.kernel, "", "fstab-only words are dropped");

	is_int(parse("ro,nosuid,nodev,noatime,fsname=tank", &cfg, &mo, &err), 0, "kernel flags");
	is_str(mo.kernel, "ro,nosuid,nodev,noatime,fsname=tank", "kernel flags pass through");
	ok(mo.noatime && mo.nodiratime, "noatime: backing opens take O_NOATIME");

	/* atime words: the daemon keeps them; libfuse 3.14 would refuse most. */
	memset(&mo, 0, sizeof(mo));
	is_int(parse("relatime,diratime,nostrictatime,nolazytime,nodiratime", &cfg, &mo, &err), 0,
	       "atime words that name the default, and nodiratime");
	is_str(mo.kernel, "", "none of them reaches libfuse");
	ok(mo.nodiratime && !mo.noatime, "nodiratime: directories only");
	is_int(parse("strictatime", &cfg, &mo, &err), -EINVAL, "strictatime refused");
	ok(strstr(err.msg, "strictatime") != NULL, "the message names it: %s", err.msg);
	is_int(parse("lazytime", &cfg, &mo, &err), -EINVAL, "lazytime refused");
	is_int(parse("norelatime", &cfg, &mo, &err), -EINVAL, "norelatime refused");

	/* The last word wins, as mount(8) has it. */
	is_int(parse("noatime,atime", &cfg, &mo, &err), 0, "noatime,atime");
	ok(!mo.noatime && !mo.nodiratime, "atime undoes noatime");
	is_int(parse("nodiratime,diratime", &cfg, &mo, &err), 0, "nodiratime,diratime");
	ok(!mo.nodiratime, "diratime undoes nodiratime");
	is_int(parse("nosymfollow", &cfg, &mo, &err), 0, "nosymfollow");
	ok(mo.nosymfollow, "nosymfollow kept for mount_setattr");
	is_str(mo.kernel, "", "nosymfollow does not reach libfuse");
	is_int(parse("nosymfollow,symfollow", &cfg, &mo, &err), 0, "symfollow");
	ok(!mo.nosymfollow, "symfollow undoes nosymfollow");
	is_int(parse("subtype=other", &cfg, &mo, &err), -EINVAL, "subtype=other refused");
	ok(strstr(err.msg, "subtype=other") != NULL, "the message names it: %s", err.msg);
	is_int(parse("subtype=uringfs", &cfg, &mo, &err), 0, "subtype=uringfs");
	is_str(mo.kernel, "", "subtype=uringfs: the daemon sets it anyway");
	is_int(parse("blksize=4096", &cfg, &mo, &err), -EINVAL, "blksize refused");
	ok(strstr(err.msg, "blksize") != NULL, "the message names it: %s", err.msg);

	is_int(parse("cpus=0\\,1", &cfg, &mo, &err), 0, "escaped comma in a value");
	is_str(cfg.cpus, "0,1", "cpus=0,1 via \\,");
	is_int(cfg.cpu_count, 2, "two CPUs");

	is_int(parse("bogus", &cfg, &mo, &err), -EINVAL, "unknown option refused");
	is_str(err.msg, "unknown mount option 'bogus'", "unknown option named");
	is_int(parse("workers=many", &cfg, &mo, &err), -EINVAL, "bad value refused");
	ok(strstr(err.msg, "workers=many") != NULL, "bad value named");
	is_int(parse("config=", &cfg, &mo, &err), -EINVAL, "empty config= refused");
	is_int(parse("", &cfg, &mo, &err), 0, "empty string is fine");
	is_int(parse("debug", &cfg, &mo, &err), 0, "debug");
	is_int(cfg.log_level, 7, "debug sets log_level=debug");
	is_int(parse("default_permissions=off", &cfg, &mo, &err), 0, "default_permissions=off");
	ok(!cfg.default_permissions, "default_permissions turned off");

	/* mount(8)'s remount passes mountinfo's FUSE words back, remount last or not. */
	is_int(parse("rw,nosuid,user_id=0,group_id=0,rootmode=40000,default_permissions,remount",
		     &cfg, &mo, &err),
	       0, "a remount list with FUSE's mountinfo words");
	ok(mo.remount, "remount seen");
	is_int(parse("user_id=0", &cfg, &mo, &err), -EINVAL, "user_id= without remount refused");
	is_int(parse("remount,strictatime", &cfg, &mo, &err), -EINVAL,
	       "strictatime refused with remount too");

	/* nosymfollow is set on the mount by the daemon, not passed to libfuse. */
	is_int(parse("nosymfollow", &cfg, &mo, &err), 0, "nosymfollow");
	ok(mo.nosymfollow && !mo.kernel[0], "nosymfollow kept, not for libfuse");
	is_int(parse("nosymfollow,symfollow", &cfg, &mo, &err), 0, "symfollow");
	ok(!mo.nosymfollow, "the last word wins");
	return t_done();
}
