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
#include <spawn.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <fuse_opt.h>

#include "log.h"
#include "mount.h"

/* Options mount(8) and fusermount3 understand; passed on to libfuse. */
static const char *const kernel_flags[] = {
	"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
	"atime", "noatime", "dirsync", "auto_unmount", NULL,
};

/*
 * atime through a FUSE mount is the daemon's business: the kernel marks every
 * FUSE inode S_NOATIME, and a backing file's atime moves by the backing
 * mount's rules when the daemon reads it.  So noatime and nodiratime are kept
 * by opening backing files with O_NOATIME; the words that name the default
 * are accepted; those that ask for more updates than the backing mount makes
 * cannot be kept and are refused.  libfuse 3.14 knows none of these but
 * atime and noatime.
 */
static const char *const atime_default_words[] = {
	"relatime", "diratime", "nostrictatime", "nolazytime", NULL,
};
static const char *const atime_refused_words[] = {
	"strictatime", "norelatime", "lazytime", NULL,
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
	if (!value && !strcmp(opt, "noatime"))
		mo->noatime = mo->nodiratime = true;	/* and on to the kernel below */
	/* The kernel's word is the last one; libfuse mounts nosuid unless told. */
	if (!value && (!strcmp(opt, "suid") || !strcmp(opt, "nosuid")))
		mo->suid = !strcmp(opt, "suid");	/* and on to the kernel below */
	if (!value && !strcmp(opt, "nodiratime")) {
		mo->nodiratime = true;
		return 0;
	}
	if (!value && in_list(atime_default_words, opt))
		return 0;
	if (!value && in_list(atime_refused_words, opt)) {
		error_set(err, "mount option %s: atime follows the source's own mount through "
			       "uringfs; only noatime and nodiratime can be asked for", opt);
		return -EINVAL;
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

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void mountinfo_unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/*
 * Find our mount at m->real in /proc/self/mountinfo.  Returns its device
 * minor (the connection number), or -1.  Reading mountinfo rather than
 * stat(2) of the mount point: a path reference held at the wrong moment
 * makes an unmount fail with EBUSY, and a dead connection answers stat with
 * ENOTCONN.
 */
static long mount_find(const struct ufs_mount *m)
{
	char *line = NULL, mnt[PATH_MAX];
	unsigned int major, minor;
	size_t cap = 0;
	long found = -1;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mountpoint options ... - type source */
		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &major, &minor, mnt) != 3 || major)
			continue;
		mountinfo_unescape(mnt);
		if (!strcmp(mnt, m->real) && strstr(line, " - fuse.uringfs "))
			found = minor;	/* the topmost one wins */
	}
	free(line);
	fclose(f);
	return found;
}

static void mount_identify(struct ufs_mount *m)
{
	long id;

	if (!realpath(m->mountpoint, m->real))
		snprintf(m->real, sizeof(m->real), "%s", m->mountpoint);
	id = mount_find(m);
	m->conn_id = id > 0 ? (unsigned int)id : 0;
}

int ufs_mount_real_path(const char *path, char *real, size_t len)
{
	char dir[PATH_MAX], parent[PATH_MAX];
	const char *base;
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
		dir[strlen(dir) - 1] = '\0';
	slash = strrchr(dir, '/');
	if (!slash) {
		base = dir;
		if (!getcwd(parent, sizeof(parent)))
			return -errno;
	} else {
		*slash = '\0';
		base = slash + 1;
		if (!realpath(slash == dir ? "/" : dir, parent))
			return -errno;
	}
	if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
		return -EINVAL;
	if (snprintf(real, len, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", base) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

bool ufs_mount_owned_by(const char *real, uid_t uid)
{
	char *line = NULL, mnt[PATH_MAX], want[32];
	unsigned int major, minor;
	size_t cap = 0;
	bool owned = false;
	FILE *f;

	snprintf(want, sizeof(want), "user_id=%u,", (unsigned int)uid);
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	while (getline(&line, &cap, f) > 0) {
		const char *super;

		if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &major, &minor, mnt) != 3 || major)
			continue;
		mountinfo_unescape(mnt);
		super = strstr(line, " - fuse.uringfs ");
		if (!strcmp(mnt, real) && super)
			owned = strstr(super, want) != NULL;	/* the topmost one wins */
	}
	free(line);
	fclose(f);
	return owned;
}

long ufs_mount_conn_of(const char *real)
{
	struct ufs_mount m = { 0 };

	snprintf(m.real, sizeof(m.real), "%s", real);
	return mount_find(&m);
}

bool ufs_mount_listed(const struct ufs_mount *m)
{
	return m->conn_id && mount_find(m) == (long)m->conn_id;
}

int ufs_mount_detach(struct ufs_mount *m)
{
	char *argv[] = { "fusermount3", "-u", "-z", "--", m->real, NULL };
	int status, ret;
	pid_t pid;

	if (!geteuid())
		return umount2(m->real, MNT_DETACH) ? -errno : 0;
	/* The way libfuse unmounts for an ordinary user. */
	ret = posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ);
	if (ret)
		return -ret;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EPERM;
}

void ufs_mount_kernel_options(const struct ufs_config *cfg, const struct ufs_mount_opts *mo,
			      char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s", cfg->allow_other ? "allow_other," : "",
		 cfg->default_permissions ? "default_permissions," : "", mo->kernel,
		 mo->kernel[0] ? "" : "-");
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
	mount_identify(m);
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
	} else if (!m->se && m->mountpoint[0] && m->conn_id) {
		/* Taken over, no libfuse session: as libfuse would (lazily, as root). */
		if (ufs_mount_listed(m) && ufs_mount_detach(m))
			ufs_warn("cannot unmount %s: %m", m->real);
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
