// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Logging targets.  Every line is written with one write(2) so lines from
 * different workers never interleave.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static enum ufs_log_level log_level = UFS_LOG_INFO;
static enum ufs_log_target log_target = UFS_LOG_TARGET_STDERR;
/* Until the daemon detaches: warnings and errors to stderr too (ufs_log_detaching). */
static bool log_echo_stderr;

void ufs_log_set_level(enum ufs_log_level level)
{
	__atomic_store_n(&log_level, level, __ATOMIC_RELAXED);
}

enum ufs_log_level ufs_log_get_level(void)
{
	return __atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

void ufs_log_set_target(enum ufs_log_target target)
{
	/* Workers may log meanwhile (the target changes once they serve): atomics. */
	if (target == UFS_LOG_TARGET_SYSLOG &&
	    __atomic_load_n(&log_target, __ATOMIC_RELAXED) != UFS_LOG_TARGET_SYSLOG)
		openlog("uringfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	__atomic_store_n(&log_echo_stderr, false, __ATOMIC_RELAXED);
	__atomic_store_n(&log_target, target, __ATOMIC_RELEASE);
}

void ufs_log_detaching(void)
{
	ufs_log_set_target(UFS_LOG_TARGET_SYSLOG);
	__atomic_store_n(&log_echo_stderr, true, __ATOMIC_RELAXED);
}

void ufs_log_reopen(void)
{
	if (__atomic_load_n(&log_target, __ATOMIC_RELAXED) != UFS_LOG_TARGET_SYSLOG)
		return;
	closelog();
	openlog("uringfs", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

bool ufs_log_enabled(enum ufs_log_level level)
{
	return level <= ufs_log_get_level();
}

static const char *log_level_name(enum ufs_log_level level)
{
	switch (level) {
	case UFS_LOG_ERR:
		return "error";
	case UFS_LOG_WARN:
		return "warn";
	case UFS_LOG_INFO:
		return "info";
	case UFS_LOG_DEBUG:
		return "debug";
	}
	return "?";
}

void ufs_log(enum ufs_log_level level, const char *fmt, ...)
{
	char line[1024];
	int saved_errno = errno;
	va_list ap;
	enum ufs_log_target target = __atomic_load_n(&log_target, __ATOMIC_ACQUIRE);
	int n = 0;

	if (!ufs_log_enabled(level))
		return;

	va_start(ap, fmt);
	if (target == UFS_LOG_TARGET_SYSLOG) {
		va_list copy;

		va_copy(copy, ap);
		vsyslog(level, fmt, copy);
		va_end(copy);
		/* A warning or an error before detaching is the caller's to see, too. */
		if (!__atomic_load_n(&log_echo_stderr, __ATOMIC_RELAXED) || level > UFS_LOG_WARN) {
			va_end(ap);
			errno = saved_errno;
			return;
		}
		/* Restored for %m. */
		errno = saved_errno;
	}
	if (target == UFS_LOG_TARGET_JOURNAL)
		n = snprintf(line, sizeof(line), "<%d>", level);
	else
		n = snprintf(line, sizeof(line), "uringfs: %s: ", log_level_name(level));
	n += vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);

	if (n >= (int)sizeof(line) - 1)
		n = sizeof(line) - 2;
	if (n > 0 && line[n - 1] != '\n')
		line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* Nowhere left to report it. */
	}
	errno = saved_errno;
}

void ufs_bug(const char *what, const char *file, int line)
{
	ufs_err("BUG at %s:%d: %s", file, line, what);
	abort();
}

#ifdef UFS_DEBUG
void ufs_debug_pause(const char *point)
{
	const char *spec = getenv("UFS_DEBUG_PAUSE");
	size_t n = strlen(point);

	for (; spec && *spec; spec = strchr(spec, ',') ? strchr(spec, ',') + 1 : NULL) {
		if (!strncmp(spec, point, n) && spec[n] == ':') {
			usleep(atoi(spec + n + 1) * 1000);
			return;
		}
	}
}
#endif
