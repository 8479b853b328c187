// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: settings: defaults, every value type, precedence, and the ini
 * reader against bad files, each of which must give one "FILE:LINE: what is
 * wrong" line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_check.h"
#include "config_file.h"
#include "log.h"
#include "tap.h"

static char tmpdir[] = "/tmp/ufs-test-config.XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static void test_defaults(void)
{
	struct ufs_config cfg;

	ufs_config_defaults(&cfg);
	is_int(cfg.workers, 0, "workers defaults to 0 (online CPUs)");
	is_int(cfg.queue_depth, 128, "queue_depth defaults to 128");
	is_int(cfg.io_uring, UFS_SWITCH_AUTO, "io_uring defaults to auto");
	is_int(cfg.zero_copy, UFS_SWITCH_AUTO, "zero_copy defaults to auto");
	is_int(cfg.max_write, 1 << 20, "max_write defaults to 1M");
	ok(cfg.default_permissions, "default_permissions defaults to on");
	ok(!cfg.allow_other, "allow_other defaults to off");
	is_str(cfg.stats_file, ".uringfs", "stats_file defaults to .uringfs");
	is_int(cfg.log_level, UFS_LOG_INFO, "log_level defaults to info");
	is_int(cfg.xattr_trusted, UFS_XATTR_ALLOW, "trusted. xattrs pass by default (the kernel gates them)");
}

static void test_values(void)
{
	struct ufs_config cfg;
	struct ufs_config_error err;

	ufs_config_defaults(&cfg);
	is_int(ufs_config_set(&cfg, "workers", "4", UFS_SRC_MOUNT_OPT, &err), 0, "workers=4");
	is_int(cfg.workers, 4, "workers is 4");
	is_int(ufs_config_set(&cfg, "max_write", "128K", UFS_SRC_MOUNT_OPT, &err), 0, "128K");
	is_int(cfg.max_write, 131072, "max_write is 131072");
	is_int(ufs_config_set(&cfg, "attr_timeout", "0.5", UFS_SRC_MOUNT_OPT, &err), 0, "0.5 s");
	ok(cfg.attr_timeout == 0.5, "attr_timeout is 0.5");
	ok(ufs_config_is_set(&cfg, "attr_timeout") && !ufs_config_is_set(&cfg, "entry_timeout"),
	   "attr_timeout set, entry_timeout at its default");
	is_int(cfg.cache, UFS_CACHE_AUTO, "cache defaults to auto");
	is_int(ufs_config_set(&cfg, "cache", "timeout", UFS_SRC_MOUNT_OPT, &err), 0, "cache=timeout");
	is_int(cfg.cache, UFS_CACHE_TIMEOUT, "cache is timeout");
	is_int(ufs_config_set(&cfg, "allow_other", NULL, UFS_SRC_MOUNT_OPT, &err), 0,
	       "bare boolean key");
	ok(cfg.allow_other, "bare allow_other means on");
	is_int(ufs_config_set(&cfg, "io_uring", "OFF", UFS_SRC_MOUNT_OPT, &err), 0,
	       "enum values ignore case");
	is_int(ufs_config_set(&cfg, "cpus", "0-1:3", UFS_SRC_MOUNT_OPT, &err), 0, "cpu list");
	is_int(cfg.cpu_count, 3, "three CPUs");
	is_int(ufs_config_set(&cfg, "stats_file", "off", UFS_SRC_MOUNT_OPT, &err), 0,
	       "stats_file=off");
	is_str(cfg.stats_file, "", "control file disabled");

	is_int(ufs_config_set(&cfg, "nosuchkey", "1", UFS_SRC_MOUNT_OPT, &err), -ENOENT,
	       "unknown key");
	is_int(ufs_config_set(&cfg, "workers", "-1", UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "negative number");
	is_int(ufs_config_set(&cfg, "workers", "999", UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "out of range");
	ok(strstr(err.msg, "out of range") != NULL, "range error says so");
	is_int(ufs_config_set(&cfg, "cpus", "3-1", UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "reversed CPU range");
	is_int(ufs_config_set(&cfg, "stats_file", "a/b", UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "stats_file with a slash");
	is_int(ufs_config_set(&cfg, "queue_depth", NULL, UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "number without a value");
	/* A share of 1 would refuse every open: it is charged 2 (fs_open.c). */
	is_int(ufs_config_set(&cfg, "open_fds_per_user", "1", UFS_SRC_MOUNT_OPT, &err), -EINVAL,
	       "open_fds_per_user=1 is refused");
	ok(strstr(err.msg, "2..") && strstr(err.msg, "an open holds 2"),
	   "with the reason: %s", err.msg);
	is_int(ufs_config_set(&cfg, "open_fds_per_user", "2", UFS_SRC_MOUNT_OPT, &err), 0,
	       "open_fds_per_user=2 is the least");
	is_int(cfg.open_fds_per_user, 2, "and is kept");
	is_int(ufs_config_set(&cfg, "open_fds_per_user", "auto", UFS_SRC_MOUNT_OPT, &err), 0,
	       "open_fds_per_user=auto");
	is_int(cfg.open_fds_per_user, 0, "auto is 0");
}

static void test_precedence(void)
{
	struct ufs_config cfg;
	struct ufs_config_error err;
	const char *path = write_file("prec.conf", "[workers]\nworkers = 3\nqueue_depth = 8\n");

	ufs_config_defaults(&cfg);
	ufs_config_set(&cfg, "workers", "5", UFS_SRC_CMDLINE, &err);
	ufs_config_set(&cfg, "queue_depth", "4", UFS_SRC_MOUNT_OPT, &err);
	ufs_config_set(&cfg, "workers", "6", UFS_SRC_MOUNT_OPT, &err);
	is_int(ufs_config_load_file(&cfg, path, &err), 0, "file loads");
	is_int(cfg.workers, 5, "command line beats -o and the file");
	is_int(cfg.queue_depth, 4, "-o beats the file");
	ufs_config_defaults(&cfg);
	ufs_config_load_file(&cfg, path, &err);
	is_int(cfg.queue_depth, 8, "the file beats the default");
}

static const struct {
	const char *text;
	int line;
	const char *what;
} bad_files[] = {
	{ "[workers]\nworkers = lots\n", 2, "expected a whole number" },
	{ "[workers]\nworkers = 100000\n", 2, "out of range" },
	{ "[workers]\nqueue_depth = 0\n", 2, "out of range" },
	{ "[workers]\nio_uring = maybe\n", 2, "expected one of auto, on, off" },
	{ "[workers]\nzero_copy = yes please\n", 2, "expected one of" },
	{ "[workers]\ncopy_file_range = fast\n", 2, "expected one of auto, ring, thread, sync" },
	{ "[workers]\ncpus = 0-\n", 2, "expected a CPU list" },
	{ "[workers]\ncpus = 5000\n", 2, "expected a CPU list" },
	{ "[workers]\nbufpool_buffers = -3\n", 2, "expected a whole number" },
	{ "[fuse]\nmax_write = 1T\n", 2, "expected a size" },
	{ "[fuse]\nmax_write = 1\n", 2, "out of range" },
	{ "[fuse]\nattr_timeout = soon\n", 2, "expected seconds" },
	{ "[fuse]\nentry_timeout = 1e9\n", 2, "out of range" },
	{ "[fuse]\nallow_other = perhaps\n", 2, "expected on or off" },
	{ "[fuse]\nrequest_timeout = 70000\n", 2, "out of range" },
	{ "[fuse]\nreaddirplus = sometimes\n", 2, "expected one of off, on, auto" },
	{ "[fuse]\ncache = forever\n", 2, "expected one of auto, coherent, timeout, none" },
	{ "[general]\nlog_level = loud\n", 2, "expected one of error, warn, info, debug" },
	{ "[general]\nstats_file = ../x\n", 2, "expected a file name" },
	{ "[nonsense]\nworkers = 1\n", 2, "unknown section [nonsense]" },
	{ "[workers]\nspeed = 11\n", 2, "unknown key 'speed' in [workers]" },
	{ "[fuse]\nworkers = 2\n", 2, "belongs in [workers]" },
	{ "workers = 2\n", 1, "key 'workers' belongs in [workers], not before any [section]" },
	{ "[fuse]\nworkers = 2\n", 2, "key 'workers' belongs in [workers], not [fuse]" },
	{ "no_such_key = 1\n", 1, "unknown key 'no_such_key' (before any [section])" },
	{ "[workers]\n\n# fine\nworkers 2\n", 4, "syntax error" },
	{ "[backing]\nxattr_trusted = sometimes\n", 2, "expected one of allow, deny" },
	{ "[backing]\ninode_handles = always\n", 2, "expected one of never, prefer, mandatory" },
	{ "[fuse]\nmax_write =\n", 2, "empty value" },
	{ "[backing]\nopen_fds_per_user = 1\n", 2,
	  "out of range 2..16777216: an open holds 2 descriptors" },
};

static void test_bad_files(void)
{
	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		struct ufs_config cfg;
		struct ufs_config_error err = { 0 };
		char name[32], prefix[600];
		const char *path;
		int ret;

		snprintf(name, sizeof(name), "bad%zu.conf", i);
		path = write_file(name, bad_files[i].text);
		ufs_config_defaults(&cfg);
		ret = ufs_config_load_file(&cfg, path, &err);
		snprintf(prefix, sizeof(prefix), "%s:%d: ", path, bad_files[i].line);
		ok(ret == -EINVAL && !strncmp(err.msg, prefix, strlen(prefix)) &&
			   strstr(err.msg, bad_files[i].what) && !strchr(err.msg, '\n'),
		   "bad file %zu gives '%s%s'", i, prefix, bad_files[i].what);
		if (ret != -EINVAL || strncmp(err.msg, prefix, strlen(prefix)) ||
		    !strstr(err.msg, bad_files[i].what))
			printf("#   got %d: %s\n", ret, err.msg);
	}
}

/* io_path decides zero_copy, and refuses what contradicts it. */
static void test_io_path(struct ufs_config *cfg, struct ufs_config_error *err)
{
	static const struct {
		const char *io_path, *other, *value;
		int ret, zero_copy;
		const char *msg;
	} cases[] = {
		{ "auto", NULL, NULL, 0, UFS_SWITCH_AUTO, NULL },
		{ "zero_copy", NULL, NULL, 0, UFS_SWITCH_ON, NULL },
		{ "passthrough", NULL, NULL, 0, UFS_SWITCH_OFF, NULL },
		{ "copy", NULL, NULL, 0, UFS_SWITCH_OFF, NULL },
		{ "zero_copy", "io_uring", "off", -EINVAL, 0, "io_path=zero_copy needs io_uring" },
		{ "zero_copy", "zero_copy", "off", -EINVAL, 0, "contradicts zero_copy=off" },
		{ "copy", "zero_copy", "on", -EINVAL, 0, "io_path=copy contradicts zero_copy=on" },
		{ "passthrough", "writeback_cache", "on", -EINVAL, 0, "writeback_cache=on" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ufs_config_defaults(cfg);
		ok(!ufs_config_set(cfg, "io_path", cases[i].io_path, UFS_SRC_FILE, err),
		   "io_path=%s accepted", cases[i].io_path);
		if (cases[i].other)
			ufs_config_set(cfg, cases[i].other, cases[i].value, UFS_SRC_FILE, err);
		is_int(ufs_config_validate(cfg, err), cases[i].ret, cases[i].io_path);
		if (cases[i].ret)
			ok(strstr(err->msg, cases[i].msg), "io_path=%s with %s=%s: %s", cases[i].io_path,
			   cases[i].other, cases[i].value, err->msg);
		else
			is_int(cfg->zero_copy, cases[i].zero_copy, "io_path decides zero_copy");
	}
	ufs_config_defaults(cfg);
	is_int(ufs_config_set(cfg, "io_path", "fast", UFS_SRC_FILE, err), -EINVAL,
	       "io_path=fast refused");
}

static void test_cross_checks(void)
{
	struct ufs_config cfg;
	struct ufs_config_error err;

	ufs_config_defaults(&cfg);
	cfg.max_write = 5000;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "max_write not a page multiple");
	ufs_config_defaults(&cfg);
	cfg.request_timeout = 5;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "request_timeout below 15 s");
	ufs_config_defaults(&cfg);
	cfg.zero_copy = UFS_SWITCH_ON;
	cfg.io_uring = UFS_SWITCH_OFF;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "zero_copy=on with io_uring=off");
	test_io_path(&cfg, &err);
	ufs_config_defaults(&cfg);
	cfg.bufpool_buffers = 4;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "bufpool smaller than queue_depth");
	ufs_config_defaults(&cfg);
	cfg.allow_other = true;
	cfg.default_permissions = false;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "allow_other with default_permissions=off");
	ok(strstr(err.msg, "allow_other") && strstr(err.msg, "default_permissions=off"),
	   "the message names both options: %s", err.msg);
	cfg.allow_other = false;
	is_int(ufs_config_validate(&cfg, &err), 0, "default_permissions=off alone");
	ufs_config_defaults(&cfg);
	cfg.allow_other = true;
	cfg.posix_acl = false;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "allow_other with posix_acl=off");
	ok(strstr(err.msg, "posix_acl=off") != NULL, "the message names it: %s", err.msg);
	cfg.posix_acl = true;
	cfg.xattr = false;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "allow_other with xattr=off");
	ufs_config_defaults(&cfg);
	cfg.posix_acl = false;
	is_int(ufs_config_validate(&cfg, &err), 0, "posix_acl=off without allow_other");
	ufs_config_defaults(&cfg);
	cfg.request_timeout = 15;
	cfg.posix_locks = true;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "request_timeout with posix_locks");
	ok(strstr(err.msg, "request_timeout=15") && strstr(err.msg, "posix_locks=on"),
	   "the message names both options: %s", err.msg);
	cfg.posix_locks = false;
	cfg.flock_locks = true;
	is_int(ufs_config_validate(&cfg, &err), -EINVAL, "request_timeout with flock_locks");
	cfg.flock_locks = false;
	is_int(ufs_config_validate(&cfg, &err), 0, "request_timeout with the kernel's locks");
	ufs_config_defaults(&cfg);
	is_int(ufs_config_validate(&cfg, &err), 0, "defaults validate");
}

static void test_missing_file(void)
{
	struct ufs_config cfg;
	struct ufs_config_error err;
	char path[600];

	ufs_config_defaults(&cfg);
	snprintf(path, sizeof(path), "%s/none.conf", tmpdir);
	is_int(ufs_config_load_file(&cfg, path, &err), -ENOENT, "missing file is ENOENT");
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_defaults();
	test_values();
	test_precedence();
	test_bad_files();
	test_cross_checks();
	test_missing_file();
	if (system("rm -rf /tmp/ufs-test-config.*") < 0)
		perror("cleanup");
	return t_done();
}
