// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * What every worker thread does first, whichever transport it serves.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"
#include "worker.h"

int ufs_worker_thread_setup(struct ufs_worker *w, const char *role)
{
	char name[16];

	snprintf(name, sizeof(name), "uringfs-%s%u", role, w->id);
	pthread_setname_np(pthread_self(), name);

	/*
	 * A private fs_struct gives this thread its own umask, so creating
	 * calls can apply the caller's umask (FUSE_DONT_MASK) without racing
	 * the other workers.
	 */
	if (unshare(CLONE_FS))
		ufs_log_once(UFS_LOG_WARN, "unshare(CLONE_FS) failed: %m; umask is shared");

	if (w->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			ufs_warn("worker %u: cannot pin to CPU %d", w->id, w->cpu);
	}
	return 0;
}

void ufs_helper_thread_setup(const struct ufs_daemon *d)
{
	/*
	 * Threads inherit their creator's affinity: a long byte copy would
	 * otherwise share the worker's one CPU with the requests it serves.
	 */
	if (CPU_COUNT(&d->cpus))
		pthread_setaffinity_np(pthread_self(), sizeof(d->cpus), &d->cpus);
	/*
	 * A copy keeps a CPU busy for as long as it runs; at a lower weight
	 * (nice is per thread on Linux) a worker woken by a request takes
	 * the CPU from it at once instead of waiting for its time slice.
	 */
	if (setpriority(PRIO_PROCESS, (id_t)gettid(), UFS_HELPER_NICE))
		ufs_log_once(UFS_LOG_DEBUG, "copy helper: setpriority: %m");
}

void ufs_daemon_fatal(struct ufs_daemon *d, int error)
{
	uint64_t one = 1;

	__atomic_compare_exchange_n(&d->fatal, &(int){ 0 }, error ? error : -EIO, false,
				    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	if (write(d->event_fd, &one, sizeof(one)) < 0) {
		/* The counter is at its limit: the main loop is awake anyway. */
	}
}

void ufs_daemon_worker_exited(struct ufs_daemon *d, int error)
{
	uint64_t one = 1;

	if (error)
		__atomic_compare_exchange_n(&d->worker_error, &(int){ 0 }, error, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELEASE);
	if (write(d->event_fd, &one, sizeof(one)) < 0) {
		/* The counter is at its limit: the main loop is awake anyway. */
	}
}
