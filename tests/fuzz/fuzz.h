/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the fuzz harnesses share: the invariant check, and the layout of a
 * fuzz-decode input (the corpus generator writes the same layout).
 */
#ifndef UFS_FUZZ_H
#define UFS_FUZZ_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * An invariant of the code under test failed: say which, then abort, so
 * libFuzzer saves the input as a crash artifact.
 */
static inline void __attribute__((format(printf, 3, 4), noreturn))
fuzz_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "INVARIANT FAILED at %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

#define fuzz_check(cond, ...)                                                                      \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fuzz_fail(__FILE__, __LINE__, __VA_ARGS__);                                \
	} while (0)

/* [p, p + len) lies inside [base, base + size). */
static inline bool fuzz_inside(const void *p, size_t len, const void *base, size_t size)
{
	uintptr_t a = (uintptr_t)p, b = (uintptr_t)base;

	return a >= b && a - b <= size && len <= size - (a - b);
}

/*
 * A fuzz-decode input: this preamble, then a fuse_in_header, then the
 * bytes after the header (the op struct and whatever follows it).
 */
struct fuzz_decode_pre {
	uint64_t conn_flags;	/* what INIT negotiated */
	uint32_t conn_minor;
	uint16_t split;		/* io_uring layout: bytes put in op_in (at most 128) */
	uint16_t reserved;
};

_Static_assert(sizeof(struct fuzz_decode_pre) == 16, "fuzz_decode_pre");

#endif /* UFS_FUZZ_H */
