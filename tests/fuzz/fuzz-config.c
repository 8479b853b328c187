// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * fuzz-config: arbitrary ini text through the real ufs_config_load_file()
 * (libinih reading a file: a memfd opened by its /proc/self/fd path), then
 * ufs_config_validate().
 *
 * Invariants:
 *   - a load fails only with -EINVAL and the one-line message
 *     "FILE:LINE: what", LINE a line of the file;
 *   - the message is about LINE: the file cut after LINE - 1 lines loads,
 *     and the file cut after LINE lines fails with the same message;
 *   - comment lines mean nothing: without them the file loads the same;
 *   - a loaded configuration holds only values the settings table allows;
 *   - validation fails with one line, and passes only consistent settings.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config_check.h"
#include "config_file.h"
#include "fuzz.h"

static int memfd = -1;
static char path[64];

static void put_file(const uint8_t *data, size_t size)
{
	if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size))
		abort();
}

static int load(const uint8_t *data, size_t size, struct ufs_config *cfg,
		struct ufs_config_error *err)
{
	put_file(data, size);
	ufs_config_defaults(cfg);
	memset(err, 0, sizeof(*err));
	return ufs_config_load_file(cfg, path, err);
}

/* Bytes up to and including the n-th '\n' (all of them if fewer lines). */
static size_t first_lines(const uint8_t *data, size_t size, unsigned long n)
{
	size_t i = 0;

	while (n && i < size) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);

		if (!nl)
			return size;
		i = nl - data + 1;
		n--;
	}
	return i;
}

static unsigned long count_lines(const uint8_t *data, size_t size)
{
	unsigned long n = 0;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n + (size && data[size - 1] != '\n');
}

/* The file without its comment lines (';' or '#' after optional white space). */
static size_t strip_comments(const uint8_t *data, size_t size, uint8_t *out)
{
	size_t n = 0, i = 0;

	while (i < size) {
		const uint8_t *nl = memchr(data + i, '\n', size - i);
		size_t end = nl ? (size_t)(nl - data) + 1 : size, j = i;

		while (j < end && (data[j] == ' ' || (data[j] >= '\t' && data[j] <= '\r')))
			j++;
		if (j == end || (data[j] != ';' && data[j] != '#')) {
			memcpy(out + n, data + i, end - i);
			n += end - i;
		}
		i = end;
	}
	return n;
}

static void check_one_line(const char *msg, const char *what)
{
	fuzz_check(msg[0], "%s: empty message", what);
	fuzz_check(strnlen(msg, sizeof(((struct ufs_config_error *)0)->msg)) <
			   sizeof(((struct ufs_config_error *)0)->msg),
		   "%s: message not NUL-terminated", what);
	fuzz_check(!strchr(msg, '\n'), "%s: message has a newline: %s", what, msg);
}

/* "PATH:LINE: what": returns LINE. */
static unsigned long error_line(const char *msg)
{
	size_t plen = strlen(path);
	const char *p = msg + plen + 1;
	unsigned long line = 0;

	fuzz_check(!strncmp(msg, path, plen) && msg[plen] == ':', "not FILE:LINE: %s", msg);
	fuzz_check(*p >= '1' && *p <= '9', "no line number: %s", msg);
	while (*p >= '0' && *p <= '9')
		line = line * 10 + (*p++ - '0');
	fuzz_check(p[0] == ':' && p[1] == ' ' && p[2], "not FILE:LINE: what: %s", msg);
	return line;
}

static void check_values(const struct ufs_config *c)
{
	cpu_set_t set;
	unsigned int count;

	fuzz_check(c->log_level == 3 || c->log_level == 4 || c->log_level == 6 ||
			   c->log_level == 7, "log_level %d", c->log_level);
	fuzz_check(strnlen(c->stats_file, sizeof(c->stats_file)) < sizeof(c->stats_file) &&
			   !strchr(c->stats_file, '/') && strcmp(c->stats_file, ".") &&
			   strcmp(c->stats_file, ".."),
		   "stats_file '%s'", c->stats_file);
	fuzz_check(c->workers <= 256, "workers %u", c->workers);
	fuzz_check(strnlen(c->cpus, sizeof(c->cpus)) < sizeof(c->cpus), "cpus unterminated");
	fuzz_check(!ufs_parse_cpulist(c->cpus, &set, &count) && count == c->cpu_count &&
			   CPU_EQUAL(&set, &c->cpu_set) &&
			   (int)c->cpu_count == CPU_COUNT(&c->cpu_set),
		   "cpus '%s' and its set disagree", c->cpus);
	fuzz_check(c->queue_depth >= 1 && c->queue_depth <= 1024, "queue_depth %u",
		   c->queue_depth);
	fuzz_check(c->io_uring >= 0 && c->io_uring <= 2, "io_uring %d", c->io_uring);
	fuzz_check(c->zero_copy >= 0 && c->zero_copy <= 2, "zero_copy %d", c->zero_copy);
	fuzz_check(c->bufpool_buffers <= 4096, "bufpool_buffers %u", c->bufpool_buffers);
	fuzz_check(c->copy_file_range >= 0 && c->copy_file_range <= 3, "copy_file_range %d",
		   c->copy_file_range);
	fuzz_check(c->max_write >= 4096 && c->max_write <= 16 << 20, "max_write %u",
		   c->max_write);
	fuzz_check(isfinite(c->attr_timeout) && c->attr_timeout >= 0 && c->attr_timeout <= 86400,
		   "attr_timeout %g", c->attr_timeout);
	fuzz_check(isfinite(c->entry_timeout) && c->entry_timeout >= 0 &&
			   c->entry_timeout <= 86400, "entry_timeout %g", c->entry_timeout);
	fuzz_check(isfinite(c->negative_timeout) && c->negative_timeout >= 0 &&
			   c->negative_timeout <= 86400,
		   "negative_timeout %g", c->negative_timeout);
	fuzz_check(c->request_timeout <= 65535, "request_timeout %u", c->request_timeout);
	fuzz_check(c->readdirplus >= 0 && c->readdirplus <= 2, "readdirplus %d", c->readdirplus);
	fuzz_check(c->xattr_trusted >= 0 && c->xattr_trusted <= 1, "xattr_trusted %d",
		   c->xattr_trusted);
	fuzz_check(c->xattr_security >= 0 && c->xattr_security <= 1, "xattr_security %d",
		   c->xattr_security);
	fuzz_check(c->inode_handles >= 0 && c->inode_handles <= 2, "inode_handles %d",
		   c->inode_handles);
	fuzz_check(c->fd_cache >= 16 && c->fd_cache <= 1 << 20, "fd_cache %u", c->fd_cache);
}

static void check_validated(const struct ufs_config *c)
{
	fuzz_check(c->max_write % 4096 == 0, "validated max_write %u", c->max_write);
	fuzz_check(!c->request_timeout || c->request_timeout >= 15, "validated request_timeout %u",
		   c->request_timeout);
	fuzz_check(!c->bufpool_buffers || c->bufpool_buffers >= c->queue_depth,
		   "validated bufpool_buffers %u < queue_depth %u", c->bufpool_buffers,
		   c->queue_depth);
	fuzz_check(c->io_uring != UFS_SWITCH_OFF ||
			   (c->zero_copy != UFS_SWITCH_ON && c->copy_file_range != UFS_CFR_RING),
		   "validated io_uring=off with zero_copy=on or copy_file_range=ring");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ufs_config cfg, cut_cfg;
	static struct ufs_config_error err, cut_err;
	unsigned long line;
	uint8_t *stripped;
	int ret;

	if (memfd < 0) {
		memfd = memfd_create("fuzz-config.conf", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
	}

	ret = load(data, size, &cfg, &err);
	if (ret) {
		fuzz_check(ret == -EINVAL, "load returned %d: %s", ret, err.msg);
		check_one_line(err.msg, "load");
		line = error_line(err.msg);
		fuzz_check(line <= count_lines(data, size), "line %lu of a %lu-line file: %s",
			   line, count_lines(data, size), err.msg);
		/* The lines before LINE are fine... */
		ret = load(data, first_lines(data, size, line - 1), &cut_cfg, &cut_err);
		fuzz_check(!ret, "error at line %lu (%s), but the first %lu lines fail: %s", line,
			   err.msg, line - 1, cut_err.msg);
		/* ...and LINE alone after them fails the same way. */
		ret = load(data, first_lines(data, size, line), &cut_cfg, &cut_err);
		fuzz_check(ret == -EINVAL && !strcmp(err.msg, cut_err.msg),
			   "whole file: '%s'; cut after line %lu: '%s'", err.msg, line,
			   ret ? cut_err.msg : "no error");
		return 0;
	}
	check_values(&cfg);
	stripped = malloc(size ? size : 1);
	if (!stripped)
		abort();
	ret = load(stripped, strip_comments(data, size, stripped), &cut_cfg, &cut_err);
	free(stripped);
	fuzz_check(!ret && !memcmp(&cfg, &cut_cfg, sizeof(cfg)),
		   "the file loads, but not the same without its comment lines: %s",
		   ret ? cut_err.msg : "different settings");
	memset(&err, 0, sizeof(err));
	ret = ufs_config_validate(&cfg, &err);
	if (ret) {
		fuzz_check(ret == -EINVAL, "validate returned %d", ret);
		check_one_line(err.msg, "validate");
		return 0;
	}
	check_validated(&cfg);
	return 0;
}
