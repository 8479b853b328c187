// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Mount options and the mount.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/syscall.h>
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

/*
 * Options with a value that libfuse passes to the kernel.  Not blksize
 * (fs/fuse/inode.c takes it only for fuseblk: every mount would fail) and
 * not subtype (the mount must stay fuse.uringfs: the daemon, --stats and
 * the hand-over find their mount by that type); both are refused below.
 */
static const char *const kernel_keys[] = {
	"fsname", "max_read", "context", "fscontext", "defcontext", "rootcontext", NULL,
};

/*
 * FUSE's options as mountinfo shows them: mount(8) passes them back with a
 * remount (the kernel ignores them there), so a remount takes them quietly.
 */
static const char *const remount_keys[] = {
	"user_id", "group_id", "rootmode", NULL,
};

/* Words that only mean something to mount(8), fstab or systemd. */
static const char *const quiet_words[] = {
	"defaults", "_netdev", "nofail", "noauto", "auto", "user", "users", "nouser", "owner",
	"group", "nobootwait", NULL,
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
	/* The last word wins, as mount(8) has it: "noatime,atime" is atime. */
	if (!value && !strcmp(opt, "atime"))
		mo->noatime = mo->nodiratime = false;	/* and on to the kernel below */
	if (!value && !strcmp(opt, "diratime"))
		mo->nodiratime = false;
	/* The kernel's FUSE mount takes no MS_NOSYMFOLLOW: set on the mount after it. */
	if (!value && (!strcmp(opt, "nosymfollow") || !strcmp(opt, "symfollow"))) {
		mo->nosymfollow = !strcmp(opt, "nosymfollow");
		return 0;
	}
	if (value && !strcmp(opt, "subtype") && strcmp(value, "uringfs")) {
		error_set(err, "mount option subtype=%s: the mount's type stays fuse.uringfs "
			       "(the daemon finds its mount by it)", value);
		return -EINVAL;
	}
	if (value && !strcmp(opt, "subtype"))
		return 0;	/* the one the daemon sets anyway */
	if (!value && !strcmp(opt, "auto_unmount"))
		mo->auto_unmount = true;	/* and on to the kernel below */
	if (value && !strcmp(opt, "blksize")) {
		error_set(err, "mount option blksize=%s: only a fuseblk mount takes it, and "
			       "uringfs is not one", value);
		return -EINVAL;
	}
	/* The kernel's word is the last one; libfuse mounts nosuid unless told. */
	if (!value && (!strcmp(opt, "suid") || !strcmp(opt, "nosuid")))
		mo->suid = !strcmp(opt, "suid");	/* and on to the kernel below */
	if (!value && !strcmp(opt, "remount")) {
		mo->remount = true;
		return 0;
	}
	if (mo->remount && value && in_list(remount_keys, opt))
		return 0;
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

int ufs_mount_opts_each(const char *optstr, int (*fn)(char *word, void *arg), void *arg,
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
			ret = fn(word, arg);
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

struct opts_parse {
	struct ufs_config *cfg;
	struct ufs_mount_opts *mo;
	struct ufs_config_error *err;
};

static int opts_parse_word(char *word, void *arg)
{
	struct opts_parse *a = arg;

	return parse_one(word, a->cfg, a->mo, a->err);
}

static int remount_word(char *word, void *arg)
{
	*(bool *)arg |= !strcmp(word, "remount");
	return 0;
}

int ufs_mount_opts_parse(const char *optstr, struct ufs_config *cfg, struct ufs_mount_opts *mo,
			 struct ufs_config_error *err)
{
	struct opts_parse a = { .cfg = cfg, .mo = mo, .err = err };
	int ret;

	/* Known before the other words: a remount passes mountinfo's back. */
	ret = ufs_mount_opts_each(optstr, remount_word, &mo->remount, err);
	return ret ?: ufs_mount_opts_each(optstr, opts_parse_word, &a, err);
}

/* libfuse's error lines while mounting, folded into the one error line. */
static char mount_failure[256];
static bool mount_failure_catch;

static void libfuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	if (mount_failure_catch && level <= FUSE_LOG_ERR) {
		size_t n = strlen(mount_failure), len = strlen(line);

		if (n + 2 + len < sizeof(mount_failure)) {
			if (n)
				memcpy(mount_failure + n, "; ", 2), n += 2;
			memcpy(mount_failure + n, line, len + 1);
		}
		return;
	}
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

/* One line of /proc/self/mountinfo, its fields split (proc_pid_mountinfo(5)). */
struct mountinfo_line {
	unsigned int id, major, minor;
	char mnt[PATH_MAX];		/* unescaped */
	const char *opts;		/* the mount's own options, into the line */
	const char *type, *source, *super;	/* into the line */
};

/*
 * "id parent major:minor root mountpoint options [optional...] - type source
 * super": every field before " - " is escaped or has no space, so the first
 * " - " is the separator, and the fields after it are told by position:
 * the source is anyone's to choose (fsname=), the super options are the
 * kernel's.
 */
static bool mountinfo_split(char *line, struct mountinfo_line *mi)
{
	char *sep, *save;
	int opts = 0;

	if (sscanf(line, "%u %*u %u:%u %*s %4095s %n", &mi->id, &mi->major, &mi->minor, mi->mnt,
		   &opts) != 4 || !opts)
		return false;
	mountinfo_unescape(mi->mnt);
	sep = strstr(line, " - ");
	if (!sep || sep < line + opts)
		return false;
	mi->opts = line + opts;
	line[opts + strcspn(line + opts, " ")] = '\0';	/* before sep: it has a space */
	mi->type = strtok_r(sep + 3, " \n", &save);
	mi->source = mi->type ? strtok_r(NULL, " \n", &save) : NULL;
	mi->super = mi->source ? strtok_r(NULL, " \n", &save) : NULL;
	return mi->super != NULL;
}

/* A uringfs mount (a FUSE connection: major 0) whose kernel options say user_id=uid. */
static bool mountinfo_ours(const struct mountinfo_line *mi, uid_t uid)
{
	char want[32];
	size_t n;

	if (mi->major || strcmp(mi->type, "fuse.uringfs"))
		return false;
	n = snprintf(want, sizeof(want), "user_id=%u", (unsigned int)uid);
	for (const char *o = mi->super; o; o = strchr(o, ',')) {
		o += *o == ',';
		if (!strncmp(o, want, n) && (o[n] == ',' || o[n] == '\0'))
			return true;
	}
	return false;
}

/*
 * Walk /proc/self/mountinfo: fn sees each line and returns whether to go on.
 * Reading mountinfo rather than stat(2) of the mount point: a path reference
 * held at the wrong moment makes an unmount fail with EBUSY, and a dead
 * connection answers stat with ENOTCONN.
 */
static void mountinfo_walk(bool (*fn)(const struct mountinfo_line *mi, void *arg), void *arg)
{
	struct mountinfo_line mi;
	char *line = NULL;
	size_t cap = 0;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		if (mountinfo_split(line, &mi) && !fn(&mi, arg))
			break;
	}
	free(line);
	fclose(f);
}

struct mount_query {
	const char *real;
	unsigned int id;		/* by mount id instead, if not 0 */
	long minor;			/* out: -1 if none */
	bool owned;			/* out: by our euid */
};

static bool mount_query_line(const struct mountinfo_line *mi, void *arg)
{
	struct mount_query *q = arg;

	if (q->id && mi->id != q->id)
		return true;
	if (!mi->major && !strcmp(mi->type, "fuse.uringfs") && !strcmp(mi->mnt, q->real)) {
		q->minor = mi->minor;	/* the topmost one wins */
		q->owned = mountinfo_ours(mi, geteuid());
	}
	return !q->id;
}

/* Our mount at m->real: its device minor (the connection number), or -1. */
static long mount_find(const struct ufs_mount *m)
{
	struct mount_query q = { .real = m->real, .minor = -1 };

	mountinfo_walk(mount_query_line, &q);
	return q.minor;
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

long ufs_mount_ours(const char *real)
{
	struct mount_query q = { .real = real, .minor = -1 };

	mountinfo_walk(mount_query_line, &q);
	return q.owned ? q.minor : -1;
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

/* The mount id fd is on, from fdinfo: no request to a connection that may be dead. */
static unsigned int fd_mount_id(int fd)
{
	char path[64], line[128];
	unsigned int id = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && sscanf(line, "mnt_id: %u", &id) != 1)
		;
	fclose(f);
	return id;
}

struct mount_by_id {
	unsigned int id;
	long minor;			/* out: -1 if not a uringfs mount */
	char *super, *opts;
	size_t len;
};

static bool mount_by_id_line(const struct mountinfo_line *mi, void *arg)
{
	struct mount_by_id *q = arg;

	if (mi->id != q->id)
		return true;
	if (!mi->major && !strcmp(mi->type, "fuse.uringfs")) {
		q->minor = mi->minor;
		snprintf(q->super, q->len, "%s", mi->super);
		snprintf(q->opts, q->len, "%s", mi->opts);
	}
	return false;
}

long ufs_mount_conn_of_fd(int fd, char *super, char *opts, size_t len)
{
	struct mount_by_id q = {
		.id = fd_mount_id(fd), .minor = -1, .super = super, .opts = opts, .len = len,
	};

	if (len)
		super[0] = opts[0] = '\0';
	if (q.id)
		mountinfo_walk(mount_by_id_line, &q);
	return q.minor;
}

/*
 * As root, detach the mount at m->real only if it is a uringfs mount of
 * ours (and m->conn_id's, if known), checked on the very mount that goes:
 * the path is resolved once, to a descriptor, whose mount must be that one
 * in mountinfo, and umount2 names the descriptor (its /proc link leads to
 * exactly that mount), so a path changed meanwhile (a directory swapped
 * for a symlink by whoever can write to a parent) detaches nothing else.
 */
static int detach_as_root(const struct ufs_mount *m)
{
	struct mount_query q = { .real = m->real, .minor = -1 };
	char proc[64];
	int fd, ret;

	fd = open(m->real, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	q.id = fd_mount_id(fd);
	if (q.id)
		mountinfo_walk(mount_query_line, &q);
	if (q.minor < 0 || !q.owned || (m->conn_id && q.minor != (long)m->conn_id)) {
		ufs_warn("not detaching %s: it is not the uringfs mount it was a moment ago",
			 m->real);
		close(fd);
		return -ESTALE;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ret = umount2(proc, MNT_DETACH) ? -errno : 0;
	close(fd);
	return ret;
}

int ufs_mount_detach(struct ufs_mount *m)
{
	char *argv[] = { "fusermount3", "-u", "-z", "--", m->real, NULL };
	int status, ret;
	pid_t pid;

	if (!geteuid())
		return detach_as_root(m);
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

#ifndef MOUNT_ATTR_NOSYMFOLLOW
#define MOUNT_ATTR_NOSYMFOLLOW 0x00200000
#endif

/* struct mount_attr of <linux/mount.h>, which clashes with <sys/mount.h> on glibc 2.36. */
struct ufs_mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
};

/*
 * nosymfollow: the kernel's FUSE mount (fusermount3, libfuse 3.14) passes no
 * MS_NOSYMFOLLOW, so set MOUNT_ATTR_NOSYMFOLLOW on the new mount with
 * mount_setattr(2) (Linux 5.12), by a descriptor checked to be on this very
 * mount (as detach_as_root does).  O_PATH sends the connection no request:
 * INIT is not answered yet.  Needs CAP_SYS_ADMIN over the mount: an
 * ordinary user's mount is refused with one line.
 */
static int mount_set_nosymfollow(struct ufs_mount *m, struct ufs_config_error *err)
{
	struct ufs_mount_attr attr = { .attr_set = MOUNT_ATTR_NOSYMFOLLOW };
	struct mount_query q = { .real = m->real, .minor = -1 };
	int fd, ret = 0;

	fd = open(m->real, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		error_set(err, "mount option nosymfollow: cannot open %s: %s", m->real,
			  strerror(-ret));
		return ret;
	}
	q.id = fd_mount_id(fd);
	if (q.id)
		mountinfo_walk(mount_query_line, &q);
	if (q.minor < 0 || !m->conn_id || q.minor != (long)m->conn_id)
		ret = -ESTALE;
	else if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)))
		ret = -errno;
	close(fd);
	if (ret)
		error_set(err, "mount option nosymfollow: cannot set it on %s: %s%s", m->real,
			  ret == -ESTALE ? "the mount changed under it" : strerror(-ret),
			  ret == -EPERM ? " (the FUSE mount takes it only through mount_setattr, "
					  "which needs root)" : "");
	return ret;
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
	mount_failure[0] = '\0';
	if (mo->auto_unmount) {
		/* The session's mount is the keeper's: ours has none to undo. */
		m->fd = ufs_mount_keeper_start(&m->keeper, m->se, mountpoint, mount_failure,
					       sizeof(mount_failure));
		ret = m->fd < 0 ? -1 : 0;
	} else {
		mount_failure_catch = true;
		ret = fuse_session_mount(m->se, mountpoint);
		mount_failure_catch = false;
		m->fd = ret ? -1 : fuse_session_fd(m->se);
	}
	if (!ret && mo->auto_unmount) {
		fuse_session_destroy(m->se);
		m->se = NULL;
	}
	if (ret) {
		/* One line, naming the options the kernel may have refused. */
		error_set(err, "cannot mount %s on %s with options %s: %s", source, mountpoint,
			  opts, mount_failure[0] ? mount_failure : "libfuse gave no reason");
		fuse_session_destroy(m->se);
		m->se = NULL;
		ret = -EIO;
		goto out;
	}
	snprintf(m->mountpoint, sizeof(m->mountpoint), "%s", mountpoint);
	mount_identify(m);
	ret = mo->nosymfollow ? mount_set_nosymfollow(m, err) : 0;
	if (ret) {
		ufs_unmount(m);
		ufs_mount_release(m);
	}
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
		/* Taken over or kept, no libfuse session: as libfuse would (lazily, as root). */
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
	} else if (m->keeper.pid) {
		close(m->fd);
		m->fd = -1;
		ufs_mount_keeper_release(&m->keeper);
	}
}
