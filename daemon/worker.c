// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The workers: how many, on which CPUs, and what every worker thread does
 * first, whichever transport it serves.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

static unsigned int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? n : 1;
}

int ufs_workers_alloc(struct ufs_daemon *d)
{
	unsigned int n = d->cfg.workers ? d->cfg.workers : online_cpus();
	int cpu = -1;

	d->workers = calloc(n, sizeof(*d->workers));
	if (!d->workers)
		return -ENOMEM;
	d->nworkers = n;
	d->workers_alloc = n;
	if (d->cfg.cpu_count)
		d->cpus = d->cfg.cpu_set;
	else if (sched_getaffinity(0, sizeof(d->cpus), &d->cpus))
		CPU_ZERO(&d->cpus);	/* unknown: helper threads keep what they inherit */
	for (unsigned int i = 0; i < n; i++) {
		struct ufs_worker *w = &d->workers[i];

		w->id = i;
		w->daemon = d;
		w->cpu = -1;
		if (d->cfg.cpu_count) {
			/* Round-robin over the configured CPUs. */
			do {
				cpu = (cpu + 1) % UFS_CPUS_MAX;
			} while (!CPU_ISSET(cpu, &d->cfg.cpu_set));
			w->cpu = cpu;
		}
	}
	d->dev_reader.daemon = d;
	d->dev_reader.id = n;
	d->dev_reader.cpu = -1;
	return 0;
}
