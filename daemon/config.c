// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The settings table, the value parsers and the printed settings (the ini
 * file reader is config_file.c, the checks across keys config_check.c).
 *
 * Strict by design: an unknown section or key, a malformed or out-of-range
 * value stops start-up with one line naming the place and the problem.  A
 * mounting daemon should not guess.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "log.h"

enum ufs_opt_type {
	UFS_OPT_BOOL,
	UFS_OPT_UINT,
	UFS_OPT_UINT_AUTO,	/* a whole number, or "auto" (stored as 0) */
	UFS_OPT_SIZE,
	UFS_OPT_SECONDS,
	UFS_OPT_ENUM,
	UFS_OPT_NAME,
	UFS_OPT_CPULIST,
	UFS_OPT_PATH,
};

struct ufs_opt {
	const char *key;
	const char *section;
	enum ufs_opt_type type;
	size_t off;
	unsigned long long min, max;	/* UINT, SIZE; SECONDS uses them as whole seconds */
	const char *const *choices;	/* ENUM: index is the value */
	const char *def;
	const char *why;	/* UINT: said with an out-of-range error, if set */
};

static const char *const switch_names[] = { "auto", "on", "off", NULL };
static const char *const cfr_names[] = { "auto", "ring", "thread", "sync", NULL };
static const char *const io_path_names[] = { "auto", "passthrough", "zero_copy", "copy", NULL };
static const char *const cache_names[] = { "auto", "coherent", "timeout", "none", NULL };
static const char *const rdp_names[] = { "off", "on", "auto", NULL };
static const char *const xattr_policy_names[] = { "allow", "deny", NULL };
static const char *const handles_names[] = { "never", "prefer", "mandatory", NULL };
/* Indexed by syslog priority, the value of enum ufs_log_level. */
static const char *const log_names[] = { "", "", "", "error", "warn", "", "info", "debug", NULL };

#define OPT(k, s, t, field, lo, hi, ch, d)                                                         \
	{                                                                                          \
		.key = k, .section = s, .type = t, .off = offsetof(struct ufs_config, field),      \
		.min = lo, .max = hi, .choices = ch, .def = d                                      \
	}
/* w: the reason for the range, said with an out-of-range error */
#define OPT_WHY(k, s, t, field, lo, hi, d, w)                                                      \
	{                                                                                          \
		.key = k, .section = s, .type = t, .off = offsetof(struct ufs_config, field),      \
		.min = lo, .max = hi, .def = d, .why = w                                           \
	}
#define BOOL(k, s, field, d) OPT(k, s, UFS_OPT_BOOL, field, 0, 1, NULL, d)
#define ENUM(k, s, field, ch, d) OPT(k, s, UFS_OPT_ENUM, field, 0, 0, ch, d)

static const struct ufs_opt opts[] = {
	ENUM("log_level", "general", log_level, log_names, "info"),
	OPT("stats_file", "general", UFS_OPT_NAME, stats_file, 0, 0, NULL, ".uringfs"),
	BOOL("handover", "general", handover, "on"),
	OPT("slow_request_ms", "general", UFS_OPT_UINT, slow_request_ms, 0, 3600000, NULL, "5000"),

	OPT("workers", "workers", UFS_OPT_UINT, workers, 0, 256, NULL, "0"),
	OPT("cpus", "workers", UFS_OPT_CPULIST, cpus, 0, 0, NULL, ""),
	BOOL("pin_queues", "workers", pin_queues, "on"),
	OPT("queue_depth", "workers", UFS_OPT_UINT, queue_depth, 1, 1024, NULL, "128"),
	ENUM("io_uring", "workers", io_uring, switch_names, "auto"),
	ENUM("zero_copy", "workers", zero_copy, switch_names, "auto"),
	OPT("bufpool_buffers", "workers", UFS_OPT_UINT, bufpool_buffers, 0, 4096, NULL, "0"),
	ENUM("copy_file_range", "workers", copy_file_range, cfr_names, "auto"),
	ENUM("io_path", "workers", io_path, io_path_names, "auto"),

	OPT("max_write", "fuse", UFS_OPT_SIZE, max_write, 4096, 16 << 20, NULL, "1M"),
	ENUM("cache", "fuse", cache, cache_names, "auto"),
	OPT("attr_timeout", "fuse", UFS_OPT_SECONDS, attr_timeout, 0, 86400, NULL, "1"),
	OPT("entry_timeout", "fuse", UFS_OPT_SECONDS, entry_timeout, 0, 86400, NULL, "1"),
	OPT("negative_timeout", "fuse", UFS_OPT_SECONDS, negative_timeout, 0, 86400, NULL, "0"),
	OPT("request_timeout", "fuse", UFS_OPT_UINT, request_timeout, 0, 65535, NULL, "0"),
	BOOL("writeback_cache", "fuse", writeback_cache, "off"),
	BOOL("keep_cache", "fuse", keep_cache, "off"),
	BOOL("allow_other", "fuse", allow_other, "off"),
	BOOL("default_permissions", "fuse", default_permissions, "on"),
	BOOL("posix_acl", "fuse", posix_acl, "on"),
	BOOL("idmap", "fuse", idmap, "off"),
	BOOL("posix_locks", "fuse", posix_locks, "off"),
	BOOL("flock_locks", "fuse", flock_locks, "off"),
	ENUM("readdirplus", "fuse", readdirplus, rdp_names, "auto"),
	ENUM("cache_readdir", "fuse", cache_readdir, rdp_names, "auto"),
	BOOL("killpriv_v2", "fuse", killpriv_v2, "on"),
	BOOL("export_support", "fuse", export_support, "on"),
	OPT("export_inodes", "fuse", UFS_OPT_UINT, export_inodes, 0, 1 << 26, NULL, "1048576"),
	OPT("inode_limit", "fuse", UFS_OPT_UINT, inode_limit, 0, 1 << 26, NULL, "100000"),
	OPT("export_store", "fuse", UFS_OPT_PATH, export_store, 0, 0, NULL, "off"),
	BOOL("cache_symlinks", "fuse", cache_symlinks, "on"),
	BOOL("parallel_dirops", "fuse", parallel_dirops, "on"),
	BOOL("async_read", "fuse", async_read, "on"),

	BOOL("xattr", "backing", xattr, "on"),
	ENUM("xattr_trusted", "backing", xattr_trusted, xattr_policy_names, "allow"),
	ENUM("xattr_security", "backing", xattr_security, xattr_policy_names, "allow"),
	BOOL("backing_direct_io", "backing", backing_direct_io, "off"),
	ENUM("inode_handles", "backing", inode_handles, handles_names, "prefer"),
	OPT("fd_cache", "backing", UFS_OPT_UINT, fd_cache, 16, 1 << 20, NULL, "4096"),
	/* An open is charged 2 before its path is known (fs_open.c open_cost()). */
	OPT_WHY("open_fds_per_user", "backing", UFS_OPT_UINT_AUTO, open_fds_per_user, 2, 1 << 24,
		"auto", "an open holds 2 descriptors, its own and the one of the inode it pins"),
};

#define OPT_COUNT (sizeof(opts) / sizeof(opts[0]))
_Static_assert(OPT_COUNT <= sizeof(((struct ufs_config *)0)->source), "source[] too small");

static const char *const source_names[] = {
	[UFS_SRC_DEFAULT] = "default",
	[UFS_SRC_FILE] = "file",
	[UFS_SRC_MOUNT_OPT] = "-o",
	[UFS_SRC_CMDLINE] = "command line",
};

void ufs_config_error_set(struct ufs_config_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
}

static const struct ufs_opt *opt_find(const char *key, size_t *index)
{
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (!strcmp(opts[i].key, key)) {
			*index = i;
			return &opts[i];
		}
	}
	return NULL;
}

const char *ufs_config_key_at(size_t i)
{
	return i < OPT_COUNT ? opts[i].key : NULL;
}

static int parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = { "on", "yes", "true", "1" };
	static const char *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(text, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(text, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* A decimal number with an optional K, M or G (binary) suffix. */
static int parse_size(const char *text, unsigned long long *out)
{
	unsigned int shift = 0;
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10, end++;
		break;
	case 'M':
		shift = 20, end++;
		break;
	case 'G':
		shift = 30, end++;
		break;
	}
	if (v > ULLONG_MAX >> shift)
		return -EINVAL;
	v <<= shift;
	if (*end == 'i' || *end == 'B')
		end += (end[0] == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_uint(const char *text, unsigned long long *out)
{
	char *end;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	*out = strtoull(text, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int parse_seconds(const char *text, double *out)
{
	char *end;

	if (!isdigit((unsigned char)text[0]) && text[0] != '.')
		return -EINVAL;
	errno = 0;
	*out = strtod(text, &end);
	if (errno || *end || !isfinite(*out))
		return -EINVAL;
	return 0;
}

/*
 * "0-3,8,10-11".  ':' is accepted as a separator too, because commas
 * already separate -o options.
 */
int ufs_parse_cpulist(const char *text, cpu_set_t *set, unsigned int *count)
{
	const char *p = text;

	CPU_ZERO(set);
	*count = 0;
	while (*p) {
		unsigned long lo, hi;
		char *end;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		lo = strtoul(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			p = end + 1;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			hi = strtoul(p, &end, 10);
		}
		if (lo > hi || hi >= UFS_CPUS_MAX)
			return -ERANGE;
		for (unsigned long c = lo; c <= hi; c++) {
			if (!CPU_ISSET(c, set))
				(*count)++;
			CPU_SET(c, set);
		}
		p = end;
		if (*p == ',' || *p == ':') {
			p++;
			if (!*p)
				return -EINVAL;
		} else if (*p) {
			return -EINVAL;
		}
	}
	return 0;
}

static void *field(struct ufs_config *cfg, const struct ufs_opt *o)
{
	return (char *)cfg + o->off;
}

static const void *field_const(const struct ufs_config *cfg, const struct ufs_opt *o)
{
	return (const char *)cfg + o->off;
}

static void choices_text(const struct ufs_opt *o, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; o->choices[i] && n < len; i++) {
		if (!o->choices[i][0])
			continue;
		n += snprintf(buf + n, len - n, "%s%s", n ? ", " : "", o->choices[i]);
	}
}

static int set_enum(const struct ufs_opt *o, int *dst, const char *value,
		    struct ufs_config_error *err)
{
	char list[128];

	for (int i = 0; o->choices[i]; i++) {
		if (o->choices[i][0] && !strcasecmp(o->choices[i], value)) {
			*dst = i;
			return 0;
		}
	}
	choices_text(o, list, sizeof(list));
	ufs_config_error_set(err, "%s=%s: expected one of %s", o->key, value, list);
	return -EINVAL;
}

/* A file name for the control file: one path component, or "" / "off". */
static int set_name(const struct ufs_opt *o, char *dst, const char *value,
		    struct ufs_config_error *err)
{
	size_t len = strlen(value);

	if (!strcasecmp(value, "off") || !len) {
		dst[0] = '\0';
		return 0;
	}
	if (len > NAME_MAX || strchr(value, '/') || !strcmp(value, ".") || !strcmp(value, "..")) {
		ufs_config_error_set(err, "%s=%s: expected a file name (no '/', at most %d bytes) or off",
			  o->key, value, NAME_MAX);
		return -EINVAL;
	}
	memcpy(dst, value, len + 1);
	return 0;
}

/* An absolute directory path, or off. */
static int set_path(const struct ufs_opt *o, char *dst, const char *value,
		    struct ufs_config_error *err)
{
	size_t len = strlen(value);

	if (!strcasecmp(value, "off") || !len) {
		dst[0] = '\0';
		return 0;
	}
	if (len >= PATH_MAX || value[0] != '/' || strchr(value, ',')) {
		ufs_config_error_set(err, "%s=%s: expected an absolute path (no ',') or off",
				     o->key, value);
		return -EINVAL;
	}
	memcpy(dst, value, len + 1);
	return 0;
}

static int set_value(struct ufs_config *cfg, const struct ufs_opt *o, const char *value,
		     struct ufs_config_error *err)
{
	unsigned long long n;
	double secs;
	bool b;
	int ret;

	switch (o->type) {
	case UFS_OPT_BOOL:
		if (parse_bool(value, &b)) {
			ufs_config_error_set(err, "%s=%s: expected on or off", o->key, value);
			return -EINVAL;
		}
		*(bool *)field(cfg, o) = b;
		return 0;
	case UFS_OPT_UINT_AUTO:
		if (!strcmp(value, "auto")) {
			*(unsigned int *)field(cfg, o) = 0;
			return 0;
		}
		/* fall through */
	case UFS_OPT_UINT:
	case UFS_OPT_SIZE:
		ret = o->type != UFS_OPT_SIZE ? parse_uint(value, &n) : parse_size(value, &n);
		if (ret) {
			ufs_config_error_set(err, "%s=%s: expected a %s", o->key, value,
					     o->type == UFS_OPT_UINT_AUTO ? "whole number or auto"
					     : o->type == UFS_OPT_UINT	  ? "whole number"
								       : "size such as 128K or 1M");
			return -EINVAL;
		}
		if (n < o->min || n > o->max) {
			ufs_config_error_set(err, "%s=%s: out of range %llu..%llu%s%s", o->key, value,
					     o->min, o->max, o->why ? ": " : "", o->why ? o->why : "");
			return -EINVAL;
		}
		*(unsigned int *)field(cfg, o) = n;
		return 0;
	case UFS_OPT_SECONDS:
		if (parse_seconds(value, &secs)) {
			ufs_config_error_set(err, "%s=%s: expected seconds such as 1 or 0.5", o->key, value);
			return -EINVAL;
		}
		if (secs < o->min || secs > o->max) {
			ufs_config_error_set(err, "%s=%s: out of range %llu..%llu seconds", o->key, value,
				  o->min, o->max);
			return -EINVAL;
		}
		*(double *)field(cfg, o) = secs;
		return 0;
	case UFS_OPT_ENUM:
		return set_enum(o, field(cfg, o), value, err);
	case UFS_OPT_NAME:
		return set_name(o, field(cfg, o), value, err);
	case UFS_OPT_PATH:
		return set_path(o, field(cfg, o), value, err);
	case UFS_OPT_CPULIST:
		if (strlen(value) >= sizeof(cfg->cpus) ||
		    ufs_parse_cpulist(value, &cfg->cpu_set, &cfg->cpu_count)) {
			ufs_config_error_set(err, "%s=%s: expected a CPU list such as 0-3:6 (CPUs below %d)",
				  o->key, value, UFS_CPUS_MAX);
			return -EINVAL;
		}
		strcpy(cfg->cpus, value);
		return 0;
	}
	return -EINVAL;
}

int ufs_config_set(struct ufs_config *cfg, const char *key, const char *value,
		   enum ufs_source src, struct ufs_config_error *err)
{
	const struct ufs_opt *o;
	size_t index;
	int ret;

	o = opt_find(key, &index);
	if (!o) {
		ufs_config_error_set(err, "unknown key '%s'", key);
		return -ENOENT;
	}
	/* A bare boolean key ("allow_other") means on. */
	if (!value) {
		if (o->type != UFS_OPT_BOOL) {
			ufs_config_error_set(err, "%s: needs a value (%s=...)", key, key);
			return -EINVAL;
		}
		value = "on";
	}
	/* A lower-precedence source never overrides a higher one. */
	if (cfg->source[index] > src)
		return 0;
	ret = set_value(cfg, o, value, err);
	if (!ret)
		cfg->source[index] = src;
	return ret;
}

void ufs_config_defaults(struct ufs_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (set_value(cfg, &opts[i], opts[i].def, NULL))
			abort(); /* a broken default is a build bug */
	}
	/* systemd's ConfigurationDirectory= names where the unit keeps it. */
	if (getenv("CONFIGURATION_DIRECTORY"))
		snprintf(cfg->config_path, sizeof(cfg->config_path), "%s/uringfs.conf",
			 getenv("CONFIGURATION_DIRECTORY"));
	else
		snprintf(cfg->config_path, sizeof(cfg->config_path), "%s", UFS_DEFAULT_CONFIG);
}

const char *ufs_config_key_section(const char *key)
{
	size_t index;
	const struct ufs_opt *o = opt_find(key, &index);

	return o ? o->section : NULL;
}

bool ufs_config_section_known(const char *section)
{
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (!strcmp(opts[i].section, section))
			return true;
	}
	return false;
}

static void print_value(const struct ufs_config *cfg, const struct ufs_opt *o, FILE *out)
{
	const void *p = field_const(cfg, o);

	switch (o->type) {
	case UFS_OPT_BOOL:
		fputs(*(const bool *)p ? "on" : "off", out);
		break;
	case UFS_OPT_UINT_AUTO:
		if (!*(const unsigned int *)p) {
			fputs("auto", out);
			break;
		}
		/* fall through */
	case UFS_OPT_UINT:
	case UFS_OPT_SIZE:
		fprintf(out, "%u", *(const unsigned int *)p);
		break;
	case UFS_OPT_SECONDS:
		fprintf(out, "%g", *(const double *)p);
		break;
	case UFS_OPT_ENUM:
		fputs(o->choices[*(const int *)p], out);
		break;
	case UFS_OPT_NAME:
	case UFS_OPT_PATH:
		fputs(*(const char *)p ? (const char *)p : "off", out);
		break;
	case UFS_OPT_CPULIST:
		fputs(cfg->cpus[0] ? cfg->cpus : "(none)", out);
		break;
	}
}

void ufs_config_print(const struct ufs_config *cfg, FILE *out)
{
	const char *section = "";

	fprintf(out, "# configuration file: %s\n", cfg->config_path);
	for (size_t i = 0; i < OPT_COUNT; i++) {
		if (strcmp(section, opts[i].section)) {
			section = opts[i].section;
			fprintf(out, "[%s]\n", section);
		}
		fprintf(out, "%s = ", opts[i].key);
		print_value(cfg, &opts[i], out);
		fprintf(out, "\t# %s\n", source_names[cfg->source[i]]);
	}
}

int ufs_config_format(const struct ufs_config *cfg, const char *key, char *buf, size_t len)
{
	size_t index;
	const struct ufs_opt *o = opt_find(key, &index);
	FILE *f;

	if (!o)
		return -ENOENT;
	f = fmemopen(buf, len, "w");
	if (!f)
		return -errno;
	print_value(cfg, o, f);
	return fclose(f) ? -EIO : 0;
}

const char *ufs_switch_name(int value)
{
	return switch_names[value];
}

const char *ufs_cfr_mode_name(int value)
{
	return cfr_names[value];
}

const char *ufs_io_path_name(int value)
{
	return io_path_names[value];
}

const char *ufs_cache_policy_name(int value)
{
	return cache_names[value];
}

bool ufs_config_is_set(const struct ufs_config *cfg, const char *key)
{
	size_t index;

	return opt_find(key, &index) && cfg->source[index] != UFS_SRC_DEFAULT;
}
