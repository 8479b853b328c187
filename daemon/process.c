// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon as a process: its descriptor limit, its signal mask, and
 * detaching from the terminal that started it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/resource.h>
#include <unistd.h>

#include "process.h"
#include "wait.h"
#include "worker.h"

/*
 * Open files and cached inode descriptors (see inode.c) count against
 * RLIMIT_NOFILE: take every descriptor the hard limit allows.
 */
void ufs_process_raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * Detach: the parent waits until the child reports the mount ready (or
 * failed) on a pipe, so `uringfs SRC MNT` returns only once MNT serves.
 */
int ufs_process_detach(int *ready_fd)
{
	int pipefd[2];
	pid_t pid;
	char status = 1;

	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(pipefd[1]);
		if (read(pipefd[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(pipefd[0]);
	setsid();
	if (chdir("/")) {
		/* Never fails for "/". */
	}
	*ready_fd = pipefd[1];
	return 0;
}

void ufs_process_detach_done(int ready_fd, int status, bool keep_stderr)
{
	char c = status;
	int null;

	if (ready_fd < 0)
		return;
	if (!status) {
		null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDOUT_FILENO);
			/* Under systemd (an fstab mount at boot) stderr is the journal: keep it. */
			if (!keep_stderr)
				dup2(null, STDERR_FILENO);
			close(null);
		}
	}
	if (write(ready_fd, &c, 1) < 0) {
		/* The parent is gone; nothing to tell. */
	}
	close(ready_fd);
}

static void wake_handler(int sig)
{
	(void)sig;	/* only there to interrupt a blocking read */
}

int ufs_process_block_signals(sigset_t *set)
{
	struct sigaction sa = { .sa_handler = wake_handler };

	/* No SA_RESTART: the worker's read(2) returns EINTR. */
	sigemptyset(&sa.sa_mask);
	sigaction(UFS_WORKER_WAKE_SIGNAL, &sa, NULL);

	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1);
	sigaddset(set, SIGPIPE);
	/* Blocked here, so every thread created later inherits the mask. */
	if (pthread_sigmask(SIG_BLOCK, set, NULL))
		return -EINVAL;
	/* Only lock-wait threads take this one, and only while they wait. */
	return ufs_wait_block_wake_signal();
}
