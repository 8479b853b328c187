// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The debug build's lock assertion (daemon/lockdep.h): ufs_lock_held is
 * exact (this thread, not another, holds the mutex), and a _locked helper
 * of the daemon called without its lock aborts, naming the function and the
 * lock, while with the lock held it runs.  Built with -DUFS_DEBUG against
 * the debug library, as every unit test.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export.h"
#include "lockdep.h"
#include "tap.h"

#ifndef UFS_DEBUG
#error "test-lockdep checks the debug build: compile it with -DUFS_DEBUG"
#endif

static pthread_mutex_t other_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t other_go = PTHREAD_MUTEX_INITIALIZER;

/* Holds other_lock until the main thread unlocks other_go. */
static void *hold_other(void *arg)
{
	bool *held = arg;

	pthread_mutex_lock(&other_lock);
	*held = ufs_lock_held(&other_lock);
	pthread_mutex_lock(&other_go);
	pthread_mutex_unlock(&other_go);
	pthread_mutex_unlock(&other_lock);
	return NULL;
}

static void test_held_is_exact(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutexattr_t attr;
	pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
	struct timespec ts;
	bool thread_held = false;
	pthread_t t;
	int kinds[] = { PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ERRORCHECK,
			PTHREAD_MUTEX_ADAPTIVE_NP };

	ok(!ufs_lock_held(&m), "an unlocked mutex is not held");
	ok(!ufs_lock_held(NULL), "no mutex is not held");
	pthread_mutex_lock(&m);
	ok(ufs_lock_held(&m), "a default mutex we locked is held");
	pthread_mutex_unlock(&m);
	ok(!ufs_lock_held(&m), "not after unlock");
	ok(!pthread_mutex_trylock(&m) && ufs_lock_held(&m), "a trylock that took it holds it");
	clock_gettime(CLOCK_REALTIME, &ts);
	is_int(pthread_cond_timedwait(&cond, &m, &ts), ETIMEDOUT, "a condition wait times out");
	ok(ufs_lock_held(&m), "held again after the condition wait");
	pthread_mutex_unlock(&m);

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		pthread_mutex_t k;

		pthread_mutexattr_init(&attr);
		pthread_mutexattr_settype(&attr, kinds[i]);
		pthread_mutex_init(&k, &attr);
		pthread_mutex_lock(&k);
		ok(ufs_lock_held(&k), "mutex kind %d: held when locked", kinds[i]);
		pthread_mutex_unlock(&k);
		ok(!ufs_lock_held(&k), "mutex kind %d: not after unlock", kinds[i]);
		pthread_mutex_destroy(&k);
		pthread_mutexattr_destroy(&attr);
	}

	/* Another thread's lock is not ours. */
	pthread_mutex_lock(&other_go);
	pthread_create(&t, NULL, hold_other, &thread_held);
	while (pthread_mutex_trylock(&other_lock) == 0) { /* until the thread has it */
		pthread_mutex_unlock(&other_lock);
		usleep(1000);
	}
	ok(!ufs_lock_held(&other_lock), "a mutex another thread holds is not held by us");
	pthread_mutex_unlock(&other_go);
	pthread_join(t, NULL);
	ok(thread_held, "the thread that locked it holds it");
}

/*
 * Call ufs_export_has_locked in a child, with ex's lock held or not.
 * Returns the child's wait status; its stderr (the log) goes to err.
 */
static int child_calls(bool hold, char *err, size_t errlen)
{
	int pipefd[2];
	size_t got = 0;
	ssize_t n;
	pid_t pid;
	int status;

	if (pipe(pipefd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
		struct ufs_exports ex;

		dup2(pipefd[1], STDERR_FILENO);
		close(pipefd[0]);
		signal(SIGABRT, SIG_DFL);
		if (ufs_exports_init(&ex, 16, &lock))
			_exit(3);
		if (hold)
			pthread_mutex_lock(&lock);
		_exit(ufs_export_has_locked(&ex, 7) ? 2 : 0);
	}
	close(pipefd[1]);
	while (got + 1 < errlen && (n = read(pipefd[0], err + got, errlen - 1 - got)) > 0)
		got += n;
	err[got] = '\0';
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return status;
}

static void test_assert_fires(void)
{
	char err[2048];
	int status;

	status = child_calls(false, err, sizeof(err));
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	   "a _locked helper called without its lock aborts (status %#x)", status);
	ok(strstr(err, "ufs_export_has_locked() called without ex->lock held") != NULL,
	   "the log names the function and the lock");
	ok(strstr(err, "export.c:") != NULL, "and the file and line");
	if (!strstr(err, "called without"))
		printf("#   child's stderr: %s\n", err);

	status = child_calls(true, err, sizeof(err));
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "with the lock held it runs (status %#x)",
	   status);
	ok(!strstr(err, "called without"), "and logs nothing");
}

int main(void)
{
	test_held_is_exact();
	test_assert_fires();
	return t_done();
}
