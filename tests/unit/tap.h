/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A minimal TAP producer for the unit tests: automake's tap-driver counts
 * every ok line, so each check is one test in the summary.
 */
#ifndef UFS_TAP_H
#define UFS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_count;
static int tap_failures;

static inline void __attribute__((format(printf, 4, 5)))
t_ok(int pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_count++;
	printf("%sok %d - ", pass ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!pass) {
		tap_failures++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
}

#define ok(cond, ...) t_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Equal integers, with both values in the diagnostic on failure. */
#define is_int(got, want, name)                                                                    \
	do {                                                                                       \
		long long g_ = (got), w_ = (want);                                                 \
		t_ok(g_ == w_, __FILE__, __LINE__, "%s", name);                                    \
		if (g_ != w_)                                                                      \
			printf("#   got %lld, want %lld\n", g_, w_);                                   \
	} while (0)

#define is_str(got, want, name)                                                                    \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		int same_ = g_ && w_ && !strcmp(g_, w_);                                           \
		t_ok(same_, __FILE__, __LINE__, "%s", name);                                       \
		if (!same_)                                                                        \
			printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)

static inline int t_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failures ? 1 : 0;
}

#endif /* UFS_TAP_H */
