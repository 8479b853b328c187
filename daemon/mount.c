// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount options and the mount.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#include "log.h"
#include "mount.h"

/* Options mount(8) and fusermount3 understand; passed on to libfuse. */
static const char *const kernel_flags[] = {
	"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
	"atime", "noatime", "diratime", "nodiratime", "relatime", "norelatime", "strictatime",
	"nostrictatime", "lazytime", "nolazytime", "dirsync", "auto_unmount", NULL,
};

/* Options with a value that libfuse passes to the kernel. */
static const char *const kernel_keys[] = {
	"fsname", "subtype", "max_read", "blksize", "context", "fscontext", "defcontext",
	"rootcontext", NULL,
};

/* Words that only mean something to mount(8), fstab or systemd. */
static const char *const quiet_words[] = {
	"defaults", "_netdev", "nofail", "noauto", "auto", "user", "users", "nouser", "owner",
	"group", "nobootwait", "nosymfollow", NULL,
};

static bool in_list(const char *const *list, const char *word)
{
	for (; *list; list++) {
		if (!strcmp(*list, word))
			return true;
	}
	return false;
}

/*
 * Append one option to the string libfuse parses, escaping ',' and '\\' the
 * way libfuse unescapes them: "fsname=a\\,allow_other" given to us must stay
 * one fsname, not become a second option.
 */
static int append(char *buf, size_t size, const char *word)
{
	size_t start = strlen(buf), used = start;

	if (used)
		buf[used++] = ',';
	for (; *word; word++) {
		if (used + 3 > size) {
			buf[start] = '\0';
			return -E2BIG;
		}
		if (*word == ',' || *word == '\\')
			buf[used++] = '\\';
		buf[used++] = *word;
	}
	buf[used] = '\0';
	return 0;
}

static void error_set(struct ufs_config_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void error_set(struct ufs_config_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

/* One option, "key" or "key=value". */
static int parse_one(char *opt, struct ufs_config *cfg, struct ufs_mount_opts *mo,
		     struct ufs_config_error *err)
{
	char *value = strchr(opt, '=');
	struct ufs_config_error e;
	int ret;

	if (!*opt)
		return 0;
	if (value)
		*value++ = '\0';

	if (!strcmp(opt, "config")) {
		if (!value || !*value || strlen(value) >= sizeof(mo->config)) {
			error_set(err, "mount option config= needs a file name");
			return -EINVAL;
		}
		strcpy(mo->config, value);
		mo->has_config = true;
		return 0;
	}
	if (!strcmp(opt, "debug") && !value)
		return ufs_config_set(cfg, "log_level", "debug", UFS_SRC_MOUNT_OPT, err);

	ret = ufs_config_set(cfg, opt, value, UFS_SRC_MOUNT_OPT, &e);
	if (ret != -ENOENT) {
		if (ret)
			error_set(err, "mount option %s", e.msg);
		return ret;
	}
	if ((!value && in_list(kernel_flags, opt)) || (value && in_list(kernel_keys, opt))) {
		if (value)
			value[-1] = '=';
		if (append(mo->kernel, sizeof(mo->kernel), opt)) {
			error_set(err, "mount options for the kernel longer than %zu bytes",
				  sizeof(mo->kernel) - 1);
			return -EINVAL;
		}
		return 0;
	}
	if (in_list(quiet_words, opt) || !strncmp(opt, "x-", 2) || !strcmp(opt, "comment"))
		return 0;
	error_set(err, "unknown mount option '%s%s%s'", opt, value ? "=" : "", value ? value : "");
	return -EINVAL;
}

int ufs_mount_opts_parse(const char *optstr, struct ufs_config *cfg, struct ufs_mount_opts *mo,
			 struct ufs_config_error *err)
{
	char word[PATH_MAX + 64];
	size_t n = 0;
	int ret;

	/* Messages quote the options: keep them one line. */
	for (const char *p = optstr; *p; p++) {
		if (iscntrl((unsigned char)*p)) {
			error_set(err, "control character 0x%02x in the mount options",
				  (unsigned char)*p);
			return -EINVAL;
		}
	}
	for (const char *p = optstr;; p++) {
		if (*p == '\\' && p[1])
			p++;	/* "\," is a comma inside a value */
		else if (*p == ',' || !*p) {
			word[n] = '\0';
			ret = parse_one(word, cfg, mo, err);
			if (ret || !*p)
				return ret;
			n = 0;
			continue;
		}
		if (n == sizeof(word) - 1) {
			error_set(err, "mount option too long: %.40s...", word);
			return -EINVAL;
		}
		word[n++] = *p;
	}
}

static void libfuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	ufs_log(level <= FUSE_LOG_ERR ? UFS_LOG_ERR : UFS_LOG_DEBUG, "libfuse: %s", line);
}

int ufs_mount(struct ufs_mount *m, const char *source, const char *mountpoint,
	      const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
	      struct ufs_config_error *err)
{
	static const struct fuse_lowlevel_ops no_ops;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	char *opts = NULL, *fsname = NULL;
	int ret = -ENOMEM;

	memset(m, 0, sizeof(*m));
	m->fd = -1;
	fuse_set_log_func(libfuse_log);

	if (asprintf(&fsname, "fsname=%s", source) < 0) {
		fsname = NULL;
		goto out;
	}
	if (fuse_opt_add_arg(&args, "uringfs") || fuse_opt_add_opt(&opts, "subtype=uringfs") ||
	    fuse_opt_add_opt_escaped(&opts, fsname))
		goto out;
	if (cfg->allow_other && fuse_opt_add_opt(&opts, "allow_other"))
		goto out;
	if (cfg->default_permissions && fuse_opt_add_opt(&opts, "default_permissions"))
		goto out;
	if (mo->kernel[0] && fuse_opt_add_opt(&opts, mo->kernel))
		goto out;
	if (fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, opts))
		goto out;

	m->se = fuse_session_new(&args, &no_ops, sizeof(no_ops), NULL);
	if (!m->se) {
		error_set(err, "libfuse refused the mount options: %s", opts);
		ret = -EINVAL;
		goto out;
	}
	if (fuse_session_mount(m->se, mountpoint)) {
		error_set(err, "cannot mount %s on %s (see the libfuse message above)", source,
			  mountpoint);
		fuse_session_destroy(m->se);
		m->se = NULL;
		ret = -EIO;
		goto out;
	}
	m->fd = fuse_session_fd(m->se);
	snprintf(m->mountpoint, sizeof(m->mountpoint), "%s", mountpoint);
	ret = 0;
out:
	if (ret == -ENOMEM)
		error_set(err, "out of memory");
	free(opts);
	free(fsname);
	fuse_opt_free_args(&args);
	return ret;
}

void ufs_unmount(struct ufs_mount *m)
{
	if (m->se && m->mountpoint[0]) {
		fuse_session_unmount(m->se);
		m->mountpoint[0] = '\0';
	}
}

void ufs_mount_release(struct ufs_mount *m)
{
	if (m->se) {
		fuse_session_destroy(m->se);
		m->se = NULL;
		m->fd = -1;
	}
}
