// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The ini file reader: whole lines to inih, each key to ufs_config_set()
 * (config.c), the first error with its line number.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "config_file.h"

struct ini_ctx {
	struct ufs_config *cfg;
	struct ufs_config_error err;
	FILE *f;
	char *line;		/* the physical line being parsed */
	size_t line_cap;
	int lineno;		/* its number */
	int err_line;		/* line of the first error we found, 0: none */
};

static void ini_error(struct ini_ctx *ctx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The first error wins: inih goes on parsing after one. */
static void ini_error(struct ini_ctx *ctx, const char *fmt, ...)
{
	va_list ap;

	if (ctx->err_line)
		return;
	ctx->err_line = ctx->lineno;
	va_start(ap, fmt);
	vsnprintf(ctx->err.msg, sizeof(ctx->err.msg), fmt, ap);
	va_end(ap);
}

/*
 * inih's own reader (fgets into a buffer of INI_MAX_LINE, 200 bytes in
 * Debian's build) cuts a longer line in pieces and parses each piece as a
 * line of its own: the tail of a long comment would become a setting, and
 * every line number after it would be wrong.  Read whole lines instead, one
 * per call, so inih's line numbers are the file's; refuse a line that does
 * not fit, or holds a NUL byte (inih would ignore what follows it), and stop
 * at the first error.
 */
static char *config_read_line(char *buf, int size, void *stream)
{
	struct ini_ctx *ctx = stream;
	ssize_t n;

	if (ctx->err_line)
		return NULL;
	n = getline(&ctx->line, &ctx->line_cap, ctx->f);
	if (n < 0)
		return NULL;
	ctx->lineno++;
	if (memchr(ctx->line, '\0', n)) {
		ini_error(ctx, "NUL byte in the line");
		return NULL;
	}
	if (n >= size) {
		ini_error(ctx, "line longer than %d bytes", size - 2);
		return NULL;
	}
	memcpy(buf, ctx->line, n + 1);
	return buf;
}

static int config_ini_handler(void *user, const char *section, const char *key, const char *value)
{
	struct ini_ctx *ctx = user;
	struct ufs_config_error err;
	const char *home;

	if (section[0] && !ufs_config_section_known(section)) {
		ini_error(ctx, "unknown section [%s]", section);
		return 0;
	}
	home = ufs_config_key_section(key);
	if (!home && !section[0]) {
		ini_error(ctx, "unknown key '%s' (before any [section])", key);
		return 0;
	}
	if (!home) {
		ini_error(ctx, "unknown key '%s' in [%s]", key, section);
		return 0;
	}
	if (strcmp(home, section)) {
		if (section[0])
			ini_error(ctx, "key '%s' belongs in [%s], not [%s]", key, home, section);
		else
			ini_error(ctx, "key '%s' belongs in [%s], not before any [section]", key,
				  home);
		return 0;
	}
	if (!value || !value[0]) {
		ini_error(ctx, "%s: empty value", key);
		return 0;
	}
	if (ufs_config_set(ctx->cfg, key, value, UFS_SRC_FILE, &err)) {
		ini_error(ctx, "%s", err.msg);
		return 0;
	}
	return 1;
}

int ufs_config_load_file(struct ufs_config *cfg, const char *path, struct ufs_config_error *err)
{
	struct ini_ctx ctx = { .cfg = cfg };
	int line;

	ctx.f = fopen(path, "re");
	if (!ctx.f) {
		int e = errno;

		ufs_config_error_set(err, "%s: %s", path, strerror(e));
		return -e;
	}
	line = ini_parse_stream(config_read_line, &ctx, config_ini_handler, &ctx);
	if (line >= 0 && ferror(ctx.f))
		line = -1;
	fclose(ctx.f);
	free(ctx.line);
	/* inih reports the first error, ours or its own syntax error. */
	if (line > 0 && (!ctx.err_line || line < ctx.err_line))
		snprintf(ctx.err.msg, sizeof(ctx.err.msg),
			 "syntax error (expected [section] or key = value)");
	else if (ctx.err_line)
		line = ctx.err_line;
	if (line > 0) {
		ufs_config_error_set(err, "%s:%d: %s", path, line, ctx.err.msg);
		return -EINVAL;
	}
	if (line < 0) {
		ufs_config_error_set(err, "%s: cannot read file", path);
		return -EIO;
	}
	return 0;
}
