// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-mountopts: arbitrary -o strings through ufs_mount_opts_parse().
 *
 * The harness splits the string itself the way mount.h documents (commas
 * separate, a backslash escapes the next character) and checks the result:
 *
 *   - an error comes with a one-line message;
 *   - parsing is deterministic;
 *   - the kernel option string, split the way libfuse splits it (','
 *     separates; '\' escapes, "\ooo" is an octal byte), gives back exactly
 *     the kernel words of the input, in order: nothing is merged, split or
 *     smuggled in;
 *   - config= is recorded exactly as given;
 *   - a numeric setting holds exactly the number its last word says.
 */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"
#include "mount.h"

/* Options the daemon hands to libfuse: the flags and the keys with a value. */
static const char *const kernel_flags[] = {
	"ro", "rw", "suid", "nosuid", "dev", "nodev", "exec", "noexec", "async", "sync",
	"atime", "noatime", "dirsync", "auto_unmount", NULL,
};
/* Not subtype (only subtype=uringfs is taken, and the daemon sets it) nor blksize (refused). */
static const char *const kernel_keys[] = {
	"fsname", "max_read", "context", "fscontext", "defcontext", "rootcontext", NULL,
};

/* Settings the harness knows the value of: whole numbers, and max_write with a suffix. */
static const struct {
	const char *key;
	size_t off;
	bool size;
} numbers[] = {
	{ "workers", offsetof(struct ufs_config, workers), false },
	{ "queue_depth", offsetof(struct ufs_config, queue_depth), false },
	{ "bufpool_buffers", offsetof(struct ufs_config, bufpool_buffers), false },
	{ "request_timeout", offsetof(struct ufs_config, request_timeout), false },
	{ "fd_cache", offsetof(struct ufs_config, fd_cache), false },
	{ "max_write", offsetof(struct ufs_config, max_write), true },
};

struct words {
	char **w;
	size_t n, cap;
};

static bool in_list(const char *const *list, const char *word)
{
	for (; *list; list++) {
		if (!strcmp(*list, word))
			return true;
	}
	return false;
}

static void words_free(struct words *ws)
{
	for (size_t i = 0; i < ws->n; i++)
		free(ws->w[i]);
	free(ws->w);
	*ws = (struct words){ 0 };
}

static void words_add(struct words *ws, const char *w, size_t len)
{
	if (ws->n == ws->cap) {
		ws->cap = ws->cap ? 2 * ws->cap : 16;
		ws->w = realloc(ws->w, ws->cap * sizeof(*ws->w));
		if (!ws->w)
			abort();
	}
	ws->w[ws->n] = strndup(w, len);
	if (!ws->w[ws->n])
		abort();
	ws->n++;
}

/* mount.h's rule: ',' separates, '\' takes the next character literally. */
static void split_opts(const char *s, struct words *ws)
{
	size_t len = strlen(s);
	char *word = malloc(len + 1);
	size_t n = 0;

	if (!word)
		abort();
	for (const char *p = s;; p++) {
		if (*p == '\\' && p[1]) {
			word[n++] = *++p;
			continue;
		}
		if (*p == ',' || !*p) {
			words_add(ws, word, n);
			n = 0;
			if (!*p)
				break;
			continue;
		}
		word[n++] = *p;
	}
	free(word);
}

static bool is_odigit(char c, char max)
{
	return c >= '0' && c <= max;
}

/* libfuse's rule (fuse_opt.c): ',' separates, '\ooo' is a byte, '\c' is c. */
static void split_libfuse(const char *s, struct words *ws)
{
	size_t len = strlen(s);
	char *word = malloc(len + 1);
	size_t n = 0;

	if (!word)
		abort();
	for (const char *p = s;; p++) {
		if (*p == ',' || !*p) {
			words_add(ws, word, n);
			n = 0;
			if (!*p)
				break;
			continue;
		}
		if (p[0] == '\\' && p[1]) {
			p++;
			if (is_odigit(p[0], '3') && is_odigit(p[1], '7') && is_odigit(p[2], '7')) {
				int byte = (p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0');

				word[n++] = (char)byte;
				p += 2;
			} else {
				word[n++] = *p;
			}
			continue;
		}
		word[n++] = *p;
	}
	free(word);
}

/* The words of the input that are options for the kernel. */
static void kernel_words(const struct words *in, struct words *out)
{
	for (size_t i = 0; i < in->n; i++) {
		const char *w = in->w[i];
		const char *eq = strchr(w, '=');

		if (!eq && in_list(kernel_flags, w)) {
			words_add(out, w, strlen(w));
		} else if (eq) {
			char *key = strndup(w, eq - w);

			if (!key)
				abort();
			if (in_list(kernel_keys, key))
				words_add(out, w, strlen(w));
			free(key);
		}
	}
}

/*
 * The value of a decimal number with an optional K, M or G suffix, or false
 * if it does not fit 64 bits.  Only the digits and the suffix count: what
 * follows them is the parser's business, not this check's.
 */
static bool exact_value(const char *s, bool size, unsigned long long *out)
{
	unsigned long long v = 0;
	unsigned int shift = 0;

	for (; *s >= '0' && *s <= '9'; s++) {
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *s - '0', &v))
			return false;
	}
	if (size) {
		switch (*s) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		}
	}
	if (shift && v > (~0ULL >> shift))
		return false;
	*out = v << shift;
	return true;
}

static void check_numbers(const struct words *ws, const struct ufs_config *cfg)
{
	for (size_t k = 0; k < sizeof(numbers) / sizeof(numbers[0]); k++) {
		size_t klen = strlen(numbers[k].key);
		const char *value = NULL;
		unsigned int got;
		unsigned long long want;

		for (size_t i = 0; i < ws->n; i++) {
			if (!strncmp(ws->w[i], numbers[k].key, klen) && ws->w[i][klen] == '=')
				value = ws->w[i] + klen + 1;
		}
		if (!value)
			continue;
		memcpy(&got, (const char *)cfg + numbers[k].off, sizeof(got));
		fuzz_check(exact_value(value, numbers[k].size, &want) && want == got,
			   "%s=%s accepted as %u", numbers[k].key, value, got);
	}
}

static void check_config_word(const struct words *ws, const struct ufs_mount_opts *mo)
{
	const char *value = NULL;

	for (size_t i = 0; i < ws->n; i++) {
		if (!strncmp(ws->w[i], "config=", 7))
			value = ws->w[i] + 7;
	}
	fuzz_check(mo->has_config == !!value, "has_config %d", mo->has_config);
	if (value)
		fuzz_check(!strcmp(mo->config, value), "config=%s recorded as %s", value,
			   mo->config);
}

static int parse(const char *s, struct ufs_config *cfg, struct ufs_mount_opts *mo,
		 struct ufs_config_error *err)
{
	ufs_config_defaults(cfg);
	memset(mo, 0, sizeof(*mo));
	memset(err, 0, sizeof(*err));
	return ufs_mount_opts_parse(s, cfg, mo, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ufs_config cfg, cfg2;
	static struct ufs_mount_opts mo, mo2;
	static struct ufs_config_error err, err2;
	struct words in = { 0 }, want = { 0 }, got = { 0 };
	char *s;
	int ret;

	if (memchr(data, '\0', size))
		return -1;	/* a C string cannot hold it */
	s = strndup((const char *)data, size);
	if (!s)
		abort();

	ret = parse(s, &cfg, &mo, &err);
	fuzz_check(ret == parse(s, &cfg2, &mo2, &err2) && !memcmp(&cfg, &cfg2, sizeof(cfg)) &&
			   !memcmp(&mo, &mo2, sizeof(mo)) && !strcmp(err.msg, err2.msg),
		   "two parses of one string differ");
	fuzz_check(strnlen(mo.kernel, sizeof(mo.kernel)) < sizeof(mo.kernel),
		   "kernel options not NUL-terminated");
	if (ret) {
		fuzz_check(ret == -EINVAL, "error %d (mount.h: 0 or -EINVAL): '%s'", ret, err.msg);
		fuzz_check(err.msg[0], "error %d without a message", ret);
		fuzz_check(!strchr(err.msg, '\n'), "message has a newline: %s", err.msg);
		goto out;
	}
	split_opts(s, &in);
	kernel_words(&in, &want);
	if (mo.kernel[0])
		split_libfuse(mo.kernel, &got);
	fuzz_check(got.n == want.n, "%zu kernel words given, libfuse would see %zu in '%s'",
		   want.n, got.n, mo.kernel);
	for (size_t i = 0; i < want.n; i++)
		fuzz_check(!strcmp(got.w[i], want.w[i]),
			   "kernel word %zu: given '%s', libfuse would see '%s'", i, want.w[i],
			   got.w[i]);
	check_config_word(&in, &mo);
	check_numbers(&in, &cfg);
out:
	words_free(&in);
	words_free(&want);
	words_free(&got);
	free(s);
	return 0;
}
