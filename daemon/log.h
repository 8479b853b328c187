/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Logging: stderr in the foreground, stderr with <N> priority prefixes under
 * systemd (journald reads them), syslog when detached.  A daemon that will
 * detach logs to syslog from the start, so a mount is quiet on success:
 * only warnings and errors reach the caller's stderr as well.
 */
#ifndef UFS_LOG_H
#define UFS_LOG_H

#include <stdbool.h>
#include <syslog.h>

/* Levels are syslog priorities, so they map straight onto every target. */
enum ufs_log_level {
	UFS_LOG_ERR = LOG_ERR,
	UFS_LOG_WARN = LOG_WARNING,
	UFS_LOG_INFO = LOG_INFO,
	UFS_LOG_DEBUG = LOG_DEBUG,
};

enum ufs_log_target {
	UFS_LOG_TARGET_STDERR,
	UFS_LOG_TARGET_JOURNAL,
	UFS_LOG_TARGET_SYSLOG,
};

void ufs_log_set_level(enum ufs_log_level level);
enum ufs_log_level ufs_log_get_level(void);
/* Also ends ufs_log_detaching()'s echo: the daemon has detached. */
void ufs_log_set_target(enum ufs_log_target target);
/* Syslog, warnings and errors echoed to stderr: a daemon about to detach. */
void ufs_log_detaching(void);
/* SIGHUP: reconnect to syslog (after a syslog daemon restart); a no-op elsewhere. */
void ufs_log_reopen(void);
bool ufs_log_enabled(enum ufs_log_level level);
void ufs_log(enum ufs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ufs_err(...) ufs_log(UFS_LOG_ERR, __VA_ARGS__)
#define ufs_warn(...) ufs_log(UFS_LOG_WARN, __VA_ARGS__)
#define ufs_info(...) ufs_log(UFS_LOG_INFO, __VA_ARGS__)
#define ufs_dbg(...)                                                                               \
	do {                                                                                       \
		if (ufs_log_enabled(UFS_LOG_DEBUG))                                                \
			ufs_log(UFS_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

/*
 * Log a condition the kernel or a client can repeat at most once per call
 * site (the kernel's pr_warn_once).
 */
#define ufs_log_once(level, ...)                                                                   \
	do {                                                                                       \
		static _Atomic bool ufs_logged_;                                                   \
		if (!__atomic_exchange_n(&ufs_logged_, true, __ATOMIC_RELAXED))                    \
			ufs_log(level, __VA_ARGS__);                                               \
	} while (0)

/*
 * An invariant of the daemon's own state, which no kernel or client can
 * break.  Debug builds (-DUFS_DEBUG: the ASan daemon) stop at the first
 * violation, naming it; release builds compile the check away.
 */
#ifdef UFS_DEBUG
#define UFS_BUG_ON(cond)                                                                           \
	do {                                                                                       \
		if (cond)                                                                          \
			ufs_bug(#cond, __FILE__, __LINE__);                                        \
	} while (0)
#else
#define UFS_BUG_ON(cond) ((void)sizeof(cond))
#endif
void ufs_bug(const char *what, const char *file, int line) __attribute__((noreturn));

/*
 * A pause at a named point, for tests that must widen a race window to show
 * it closed: UFS_DEBUG_PAUSE=point:ms[,point:ms...] in the environment of
 * a debug build.  Release builds compile it away.
 */
#ifdef UFS_DEBUG
void ufs_debug_pause(const char *point);
#else
static inline void ufs_debug_pause(const char *point)
{
	(void)point;
}
#endif

#endif /* UFS_LOG_H */
