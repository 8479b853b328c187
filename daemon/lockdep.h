/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Lock rules the debug build checks, as the kernel's lockdep_assert_held:
 * a function whose name ends in _locked (and any other documented "called
 * with X held") starts with UFS_ASSERT_HELD(&X).  Debug builds (-DUFS_DEBUG:
 * the ASan daemon and the unit tests) stop at the first caller that does
 * not hold X, naming the function, the place and the lock; release builds
 * compile the check away.  tests/unit/locked.py holds the rule that every
 * _locked function asserts its lock first.
 *
 * Exact, not a guess: glibc records the owning thread's id in the mutex,
 * mutex->__data.__owner = THREAD_GETMEM (THREAD_SELF, tid), for every kind
 * it locks (nptl/pthread_mutex_lock.c, "Record the ownership", on the path
 * of the default PTHREAD_MUTEX_TIMED_NP kind too; trylock and the relock at
 * the end of a condition wait do the same), and clears it at unlock.  So
 * the lock is held by this thread if and only if __owner is our tid; a lock
 * another thread holds does not pass.  The one exception is lock elision
 * (the glibc.elision.enable tunable, off by default), which records no
 * owner: a debug build must not run with it.
 */
#ifndef UFS_LOCKDEP_H
#define UFS_LOCKDEP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "log.h"

#if defined(UFS_DEBUG) && defined(__GLIBC__)
/* Does the calling thread hold m? */
static inline bool ufs_lock_held(pthread_mutex_t *m)
{
	return m && __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == gettid();
}

static inline __attribute__((noreturn)) void ufs_lock_not_held(const char *lock, const char *func,
							       const char *file, int line)
{
	ufs_err("BUG at %s:%d: %s() called without %s held", file, line, func, lock);
	abort();
}

#define UFS_ASSERT_HELD(m)                                                   \
	do {                                                                 \
		if (!ufs_lock_held(m))                                       \
			ufs_lock_not_held(#m, __func__, __FILE__, __LINE__); \
	} while (0)
#else
#define UFS_ASSERT_HELD(m) ((void)sizeof(m))
#endif

#endif /* UFS_LOCKDEP_H */
