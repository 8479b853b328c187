// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uringfs: arguments, configuration, the start-up ladder, signals and
 * shutdown.
 *
 * Start-up: settings -> open SOURCE -> mount -> (detach) -> INIT -> workers
 * (for io_uring: every queue registered, so the ring is ready) -> ready.
 * Any failure before "ready" is reported on stderr, undoes the mount and
 * exits non-zero.  After it, the
 * daemon runs until the connection ends (unmount, abort) or a signal asks
 * it to unmount, and then exits 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon.h"
#include "dev.h"
#include "wait.h"
#include "io_copy.h"
#include "log.h"
#include "notify.h"
#include "uring.h"

#define SHUTDOWN_GRACE_MS 5000	/* after unmounting, before aborting the connection */

enum {
	OPT_CONFIG = 256,
	OPT_CHECK_CONFIG,
	OPT_PRINT_CONFIG,
	OPT_STATS,
	OPT_VERSION,
	OPT_ZERO_COPY,
	OPT_NO_ZERO_COPY,
	OPT_SET,
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "foreground", no_argument, NULL, 'f' },
	{ "debug", no_argument, NULL, 'd' },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "check-config", required_argument, NULL, OPT_CHECK_CONFIG },
	{ "print-config", no_argument, NULL, OPT_PRINT_CONFIG },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "zero-copy", no_argument, NULL, OPT_ZERO_COPY },
	{ "no-zero-copy", no_argument, NULL, OPT_NO_ZERO_COPY },
	{ "set", required_argument, NULL, OPT_SET },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: uringfs [OPTIONS] SOURCE MOUNTPOINT\n"
		"       uringfs --check-config FILE\n"
		"       uringfs --print-config [OPTIONS] [SOURCE MOUNTPOINT]\n"
		"       uringfs --stats MOUNTPOINT\n"
		"\n"
		"Serve the directory SOURCE at MOUNTPOINT through FUSE, over io_uring where\n"
		"the kernel offers it.\n"
		"\n"
		"Options:\n"
		"  -f, --foreground        stay in the foreground, log to stderr\n"
		"  -d, --debug             foreground with log_level=debug\n"
		"  -o OPT[,OPT...]         settings and mount options (key=value, see uringfs(8))\n"
		"      --config FILE       read settings from FILE (default %s)\n"
		"      --set KEY=VALUE     one setting, above -o and the file\n"
		"      --zero-copy         zero_copy=on\n"
		"      --no-zero-copy      zero_copy=off\n"
		"      --check-config FILE validate FILE and exit\n"
		"      --print-config      print the effective settings and their sources\n"
		"      --stats MOUNTPOINT  print the counters of a running mount\n"
		"  -h, --help              this text\n"
		"      --version           the version\n",
		UFS_DEFAULT_CONFIG);
}

struct cli {
	const char *check_config;
	const char *stats_mountpoint;
	bool print_config;
	bool debug;
};

static int cli_set(struct ufs_daemon *d, const char *key, const char *value)
{
	struct ufs_config_error err;

	if (ufs_config_set(&d->cfg, key, value, UFS_SRC_CMDLINE, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return -EINVAL;
	}
	return 0;
}

static int cli_set_pair(struct ufs_daemon *d, char *pair)
{
	char *eq = strchr(pair, '=');

	if (eq)
		*eq++ = '\0';
	return cli_set(d, pair, eq);
}

/* Returns 0, or an exit status (>0) when the arguments are done with. */
static int parse_args(struct ufs_daemon *d, struct cli *cli, int argc, char **argv)
{
	struct ufs_config_error err;
	int c;

	while ((c = getopt_long(argc, argv, "hfdo:", long_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			exit(0);
		case OPT_VERSION:
#ifdef UFS_DEBUG
			printf("uringfs %s (debug build: UFS_BUG_ON, UFS_DEBUG_PAUSE)\n",
			       PACKAGE_VERSION);
#else
			printf("uringfs %s\n", PACKAGE_VERSION);
#endif
			exit(0);
		case 'f':
			d->foreground = true;
			break;
		case 'd':
			d->foreground = true;
			cli->debug = true;
			break;
		case 'o':
			if (ufs_mount_opts_parse(optarg, &d->cfg, &d->mount_opts, &err)) {
				fprintf(stderr, "uringfs: %s\n", err.msg);
				return 1;
			}
			break;
		case OPT_CONFIG:
			snprintf(d->cfg.config_path, sizeof(d->cfg.config_path), "%s", optarg);
			d->cfg.config_path_explicit = true;
			break;
		case OPT_CHECK_CONFIG:
			cli->check_config = optarg;
			break;
		case OPT_PRINT_CONFIG:
			cli->print_config = true;
			break;
		case OPT_STATS:
			cli->stats_mountpoint = optarg;
			break;
		case OPT_ZERO_COPY:
		case OPT_NO_ZERO_COPY:
			if (cli_set(d, "zero_copy", c == OPT_ZERO_COPY ? "on" : "off"))
				return 1;
			break;
		case OPT_SET:
			if (cli_set_pair(d, optarg))
				return 1;
			break;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (cli->debug && cli_set(d, "log_level", "debug"))
		return 1;
	if (cli->check_config || cli->stats_mountpoint)
		return 0;
	/* mount.fuse3 puts -o after the positional arguments: getopt permutes them. */
	if (argc - optind == 2) {
		d->source = argv[optind];
		d->mountpoint = argv[optind + 1];
	} else if (!(cli->print_config && argc == optind)) {
		fprintf(stderr, "uringfs: expected SOURCE and MOUNTPOINT (try --help)\n");
		return 1;
	}
	if (d->mount_opts.has_config && !d->cfg.config_path_explicit) {
		snprintf(d->cfg.config_path, sizeof(d->cfg.config_path), "%s", d->mount_opts.config);
		d->cfg.config_path_explicit = true;
	}
	return 0;
}

/* The file, then cross-key checks.  A missing default file is fine. */
static int load_config(struct ufs_config *cfg)
{
	struct ufs_config_error err;
	int ret;

	ret = ufs_config_load_file(cfg, cfg->config_path, &err);
	if (ret == -ENOENT && !cfg->config_path_explicit)
		ret = 0;
	if (!ret)
		ret = ufs_config_validate(cfg, &err);
	if (ret) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return ret;
	}
	return 0;
}

static int check_config_only(const char *path)
{
	struct ufs_config cfg;
	struct ufs_config_error err;

	ufs_config_defaults(&cfg);
	if (ufs_config_load_file(&cfg, path, &err) || ufs_config_validate(&cfg, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		return 1;
	}
	printf("%s: OK\n", path);
	return 0;
}

static int print_stats(struct ufs_daemon *d, const char *mountpoint)
{
	char path[PATH_MAX], buf[4096];
	ssize_t n;
	int fd;

	if (load_config(&d->cfg))
		return 1;
	if (!d->cfg.stats_file[0]) {
		fprintf(stderr, "uringfs: stats_file=off: no control file to read\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/%s", mountpoint, d->cfg.stats_file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "uringfs: %s: %m (is %s a uringfs mount?)\n", path, mountpoint);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, n, stdout);
	close(fd);
	return n < 0 ? 1 : 0;
}

static int check_dir(const char *what, const char *path)
{
	struct stat st;

	if (stat(path, &st)) {
		fprintf(stderr, "uringfs: %s %s: %m\n", what, path);
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "uringfs: %s %s: not a directory\n", what, path);
		return -ENOTDIR;
	}
	return 0;
}

/*
 * Open files and cached inode descriptors (see inode.c) count against
 * RLIMIT_NOFILE: take every descriptor the hard limit allows.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static unsigned int online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? n : 1;
}

/*
 * Detach: the parent waits until the child reports the mount ready (or
 * failed) on a pipe, so `uringfs SRC MNT` returns only once MNT serves.
 */
static int daemonize(int *ready_fd)
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

static void daemonize_finish(int ready_fd, int status)
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
			if (!ufs_notify_under_systemd())
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

static int signals_block(sigset_t *set)
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

/*
 * The kernel's cached attributes of nodeid are stale: FUSE_NOTIFY_INVAL_INODE
 * with a negative offset drops the attributes and ACLs only, and takes no
 * inode lock, so it is safe while the request that changed them is in
 * flight (fs/fuse/inode.c: fuse_reverse_inval_inode).
 */
static void attr_stale(void *arg, uint64_t nodeid)
{
	struct ufs_daemon *d = arg;
	struct fuse_notify_inval_inode_out out = { .ino = nodeid, .off = -1, .len = 0 };
	int ret = ufs_dev_write_notify(d->fuse_fd, FUSE_NOTIFY_INVAL_INODE, &out, sizeof(out));

	/* ENOENT: the kernel has forgotten the inode, nothing is cached. */
	if (ret && ret != -ENOENT)
		ufs_log_once(UFS_LOG_WARN, "invalidating cached attributes: %s", strerror(-ret));
}

static char *control_snapshot(void *arg, size_t *len)
{
	return ufs_stats_text(arg, len);
}

/*
 * Read and answer INIT.  io_uring is offered to the kernel only when the
 * settings allow it and this process can create a ring of the kind the
 * transport needs.
 */
static int handle_init(struct ufs_daemon *d)
{
	union {
		struct fuse_in_header h;
		uint8_t bytes[8192];
	} buf;
	const struct fuse_init_in *in = (const void *)(&buf.h + 1);
	struct ufs_init_limits limits;
	struct ufs_init_out out;
	const char *why;
	bool want_uring;
	ssize_t n;
	int ret;

	n = ufs_dev_read_init(d->fuse_fd, &buf, sizeof(buf));
	if (n < 0) {
		ufs_err("reading INIT from /dev/fuse: %s", strerror(-n));
		return n;
	}
	if ((size_t)n < sizeof(buf.h) + 8 || buf.h.opcode != FUSE_INIT || buf.h.len != n) {
		ufs_err("expected INIT from the kernel, got opcode %u (%zd bytes)", buf.h.opcode, n);
		return -EPROTO;
	}
	want_uring = d->cfg.io_uring != UFS_SWITCH_OFF && ufs_uring_supported();
	ufs_init_limits_read(&limits);
	ret = ufs_init_negotiate(in, n - sizeof(buf.h), &d->cfg, &limits, want_uring, &out,
				 &d->conn);
	if (ret) {
		ufs_err("kernel speaks FUSE %u.%u; uringfs needs 7.28 or newer", in->major,
			in->minor);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return ret;
	}
	if (d->cfg.io_uring == UFS_SWITCH_ON && !d->conn.uring) {
		ufs_err("io_uring=on, but %s", d->conn.uring_off_reason);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	if (d->cfg.zero_copy == UFS_SWITCH_ON && !d->conn.uring_bufpool) {
		ufs_err("zero_copy=on, but %s", !d->conn.uring ? d->conn.uring_off_reason :
			"the kernel has no FUSE-over-io_uring buffer pools (Linux 7.3 needed)");
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	why = ufs_acls_unenforced(&d->cfg, &d->conn);
	if (why && d->cfg.allow_other) {
		ufs_err("allow_other: POSIX ACLs would not be enforced through the mount (%s)",
			why);
		ufs_dev_write_reply(d->fuse_fd, buf.h.unique, -EPROTO, NULL, 0);
		return -EOPNOTSUPP;
	}
	ret = ufs_dev_write_reply(d->fuse_fd, buf.h.unique, 0, &out, sizeof(out));
	if (ret) {
		ufs_err("replying to INIT: %s", strerror(-ret));
		return ret;
	}
	ufs_info("FUSE %u.%u, max_write=%u, flags=0x%llx", FUSE_KERNEL_VERSION, d->conn.minor,
		 d->conn.max_write, (unsigned long long)d->conn.flags);
	return 0;
}

static int workers_alloc(struct ufs_daemon *d)
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

static int start_dev_workers(struct ufs_daemon *d)
{
	for (unsigned int i = 0; i < d->nworkers; i++) {
		int fd = ufs_dev_clone(d->fuse_fd);
		int ret;

		if (fd < 0)
			return fd;
		__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
		ret = ufs_dev_worker_start(&d->workers[i], fd);
		if (ret) {
			__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
	}
	return 0;
}

/*
 * How copy_file_range will run.  The ring opcode needs the io_uring
 * transport and a kernel that passes the self-test.  Returns 0, or
 * -EOPNOTSUPP when copy_file_range=ring cannot be honoured.
 */
static int copy_mode_choose(struct ufs_daemon *d, bool ring_transport)
{
	const char *why = "the io_uring transport is not in use";
	bool ring_ok = false;
	int want = d->cfg.copy_file_range;

	if (ring_transport && (want == UFS_CFR_AUTO || want == UFS_CFR_RING))
		ring_ok = !ufs_copy_ring_selftest(&why);
	if (want == UFS_CFR_RING && !ring_ok) {
		ufs_err("copy_file_range=ring, but %s", why);
		return -EOPNOTSUPP;
	}
	d->cfr = ufs_copy_mode_resolve(want, ring_ok);
	d->cfr_mode = ufs_cfr_mode_name(d->cfr);
	if (ring_transport && !ring_ok)
		ufs_info("copy_file_range: %s (no ring opcode: %s)", d->cfr_mode, why);
	else
		ufs_info("copy_file_range: %s", d->cfr_mode);
	return 0;
}

/* The io_uring transport with a /dev/fuse reader beside it, or /dev/fuse alone. */
static int start_transport(struct ufs_daemon *d)
{
	int ret, fd;

	d->queue_mode = "-";
	d->zero_copy_state = "off";
	if (d->conn.uring) {
		/* Decided before the first request can arrive, and again if the ring fails. */
		ret = copy_mode_choose(d, true);
		if (ret)
			return ret;
		ret = ufs_uring_start(d);
		if (!ret) {
			d->transport = UFS_TRANSPORT_URING;
			fd = ufs_dev_clone(d->fuse_fd);
			if (fd < 0)
				return fd;
			__atomic_fetch_add(&d->workers_running, 1, __ATOMIC_RELAXED);
			ret = ufs_dev_worker_start(&d->dev_reader, fd);
			if (ret)
				__atomic_fetch_sub(&d->workers_running, 1, __ATOMIC_RELAXED);
			return ret;
		}
		if (ret != -EAGAIN || d->cfg.io_uring == UFS_SWITCH_ON ||
		    d->cfg.zero_copy == UFS_SWITCH_ON)
			return ret == -EAGAIN ? -EOPNOTSUPP : ret;
		/* The ring never became ready: the kernel serves the connection over /dev/fuse. */
		ufs_warn("transport: io_uring=off:setup-failed, serving over /dev/fuse");
	} else if (d->conn.uring_off_reason) {
		ufs_info("transport: io_uring=off:%s", d->conn.uring_off_reason);
	}
	d->transport = UFS_TRANSPORT_DEV;
	ret = copy_mode_choose(d, false);
	if (ret)
		return ret;
	return start_dev_workers(d);
}

/* Why a connection may end under a live mount, for the log. */
static const char *abort_cause(struct ufs_daemon *d)
{
	static char text[160];

	if (d->cfg.request_timeout && ufs_conn_has(&d->conn, FUSE_REQUEST_TIMEOUT))
		snprintf(text, sizeof(text),
			 "a request outlived request_timeout=%u s, or someone wrote to "
			 "/sys/fs/fuse/connections/%u/abort", d->cfg.request_timeout, d->mnt.conn_id);
	else
		snprintf(text, sizeof(text), "someone wrote to /sys/fs/fuse/connections/%u/abort "
			 "or forced an unmount", d->mnt.conn_id);
	return text;
}

static int abort_connection(struct ufs_daemon *d)
{
	char path[64];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", d->mnt.conn_id);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Without fusectl, end the connection the other way: the kernel aborts it
 * when its last /dev/fuse descriptor closes.  Each worker is woken from
 * its blocking read, sees "stopping", and closes its descriptor.
 */
static void force_stop(struct ufs_daemon *d)
{
	/* Lock waits and copies reply through the workers: let them finish first. */
	ufs_wait_idle();
	ufs_copy_wait_idle();
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	for (unsigned int i = 0; i < d->nworkers; i++) {
		if (d->workers[i].started)
			pthread_kill(d->workers[i].thread, UFS_WORKER_WAKE_SIGNAL);
	}
	if (d->dev_reader.started)
		pthread_kill(d->dev_reader.thread, UFS_WORKER_WAKE_SIGNAL);
	if (d->uring)
		ufs_uring_force_stop(d);
}

static void log_stats(struct ufs_daemon *d)
{
	size_t len;
	char *text = ufs_stats_text(d, &len);
	char *line, *save;

	if (!text)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		ufs_info("stats: %s", line);
	free(text);
}

static void reload_log_level(struct ufs_daemon *d)
{
	struct ufs_config cfg;
	struct ufs_config_error err;
	int ret;

	ufs_config_defaults(&cfg);
	snprintf(cfg.config_path, sizeof(cfg.config_path), "%s", d->cfg.config_path);
	ret = ufs_config_load_file(&cfg, cfg.config_path, &err);
	if (ret && ret != -ENOENT) {
		ufs_warn("SIGHUP: %s; keeping log_level", err.msg);
		return;
	}
	/* -o and the command line still win over the file. */
	if (d->cfg.source[0] <= UFS_SRC_FILE) {
		d->cfg.log_level = cfg.log_level;
		ufs_log_set_level(cfg.log_level);
	}
	ufs_info("SIGHUP: log_level is %d", ufs_log_get_level());
}

/*
 * Run until every worker has seen the connection end.  A termination
 * signal unmounts; if open files keep the lazily unmounted file system
 * alive past the grace period, the connection is aborted.
 */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The poll timeout: the nearest of the kick, the grace deadline and the status refresh. */
static int loop_timeout(int64_t grace_deadline, int64_t next_status)
{
	int64_t now = now_ms(), wait = -1;

	if (grace_deadline >= 0 && (wait < 0 || grace_deadline - now < wait))
		wait = grace_deadline > now ? grace_deadline - now : 0;
	if (next_status >= 0 && (wait < 0 || next_status - now < wait))
		wait = next_status > now ? next_status - now : 0;
	return wait;
}

static void main_loop(struct ufs_daemon *d, const sigset_t *sigs)
{
	struct pollfd pfd[2];
	bool fatal_seen = false;
	int64_t grace_deadline = -1, next_status = -1;
	int interval = ufs_notify_interval_ms();

	pfd[0].fd = signalfd(-1, sigs, SFD_CLOEXEC);
	pfd[0].events = POLLIN;
	pfd[1].fd = d->event_fd;
	pfd[1].events = POLLIN;

	while (__atomic_load_n(&d->workers_running, __ATOMIC_ACQUIRE) > 0) {
		int n;

		if (interval > 0 && next_status < 0)
			next_status = now_ms() + interval;
		n = poll(pfd, 2, loop_timeout(grace_deadline, next_status));
		if (grace_deadline >= 0 && now_ms() >= grace_deadline) {
			ufs_warn("still in use %d ms after unmounting: aborting the connection",
				 SHUTDOWN_GRACE_MS);
			if (abort_connection(d))
				force_stop(d);
			grace_deadline = -2;	/* done, never again */
		}
		if (next_status >= 0 && now_ms() >= next_status) {
			ufs_notify_status(d);
			next_status = -1;
		}
		if (n <= 0)
			continue;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			if (read(d->event_fd, &v, sizeof(v)) < 0) {
				/* Spurious wake-up. */
			}
			if (__atomic_load_n(&d->fatal, __ATOMIC_ACQUIRE) && !fatal_seen) {
				fatal_seen = true;
				ufs_err("ending the connection: it can no longer be served");
				__atomic_compare_exchange_n(&d->worker_error, &(int){ 0 }, d->fatal,
							    false, __ATOMIC_RELAXED,
							    __ATOMIC_RELAXED);
				if (abort_connection(d))
					force_stop(d);
			}
			/* A worker saw the connection end: lock waits and copies are moot. */
			ufs_wait_interrupt_all();
			ufs_copy_interrupt_all();
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(pfd[0].fd, &si, sizeof(si)) != sizeof(si))
				continue;
			switch (si.ssi_signo) {
			case SIGTERM:
			case SIGINT:
				if (grace_deadline != -1)
					break;	/* already unmounting */
				ufs_info("signal %d: unmounting %s", si.ssi_signo, d->mountpoint);
				ufs_notify_stopping();
				ufs_unmount(&d->mnt);
				grace_deadline = now_ms() + SHUTDOWN_GRACE_MS;
				break;
			case SIGHUP:
				ufs_log_reopen();
				reload_log_level(d);
				break;
			case SIGUSR1:
				log_stats(d);
				break;
			}
		}
	}
	if (pfd[0].fd >= 0)
		close(pfd[0].fd);
}

static void stop_workers(struct ufs_daemon *d)
{
	/* Helper threads reply through the transports: they finish first. */
	ufs_wait_idle();
	ufs_copy_wait_idle();
	for (unsigned int i = 0; i < d->workers_alloc; i++)
		ufs_copier_stop(&d->workers[i]);
	if (d->uring)
		ufs_uring_stop(d);
	for (unsigned int i = 0; i < d->nworkers; i++)
		ufs_dev_worker_join(&d->workers[i]);
	ufs_dev_worker_join(&d->dev_reader);
}

/* Wait for the workers that did start, after the mount was taken away. */
static void abandon_start(struct ufs_daemon *d)
{
	ufs_unmount(&d->mnt);
	while (__atomic_load_n(&d->workers_running, __ATOMIC_ACQUIRE) > 0) {
		uint64_t v;

		if (read(d->event_fd, &v, sizeof(v)) < 0 && errno != EINTR)
			break;
	}
	stop_workers(d);
}

static int run(struct ufs_daemon *d)
{
	struct ufs_config_error err;
	int ready_fd = -1, ret;
	sigset_t sigs;

	/* Before the mount: a signal from now on must not leave it behind. */
	if (signals_block(&sigs))
		return 1;
	ret = ufs_fs_init(&d->fs, &d->cfg, d->source);
	if (ret) {
		fprintf(stderr, "uringfs: source %s: %s\n", d->source, strerror(-ret));
		return 1;
	}
	d->fs.conn = &d->conn;
	d->fs.noatime = d->mount_opts.noatime;
	d->fs.nodiratime = d->mount_opts.nodiratime;
	d->fs.control_snapshot = control_snapshot;
	d->fs.attr_stale = attr_stale;
	d->fs.upcall_arg = d;
	d->event_fd = eventfd(0, EFD_CLOEXEC);
	if (d->event_fd < 0 || workers_alloc(d)) {
		fprintf(stderr, "uringfs: out of resources at start-up: %m\n");
		goto err_fs;
	}
	if (ufs_mount(&d->mnt, d->source, d->mountpoint, &d->cfg, &d->mount_opts, &err)) {
		fprintf(stderr, "uringfs: %s\n", err.msg);
		goto err_fs;
	}
	d->fuse_fd = d->mnt.fd;
	if (!d->foreground && (daemonize(&ready_fd) || ufs_fs_reopen_proc(&d->fs))) {
		fprintf(stderr, "uringfs: cannot detach: %m\n");
		goto err_unmount;
	}
	ret = handle_init(d);
	if (ret)
		goto err_unmount;
	ret = start_transport(d);
	if (ret) {
		ufs_err("starting the workers: %s", strerror(-ret));
		goto err_workers;
	}
	if (d->cfg.allow_other && geteuid())
		ufs_warn("allow_other without root: what other users create is owned by uid %u, "
			 "and gets no set-id bits", (unsigned int)geteuid());
	ufs_info("serving %s at %s: transport=%s workers=%u queue_mode=%s zero_copy=%s",
		 d->source, d->mountpoint, d->transport == UFS_TRANSPORT_URING ? "uring" : "dev",
		 d->nworkers, d->queue_mode, d->zero_copy_state);
	if (!d->foreground && !ufs_notify_under_systemd())
		ufs_log_set_target(UFS_LOG_TARGET_SYSLOG);
	daemonize_finish(ready_fd, 0);
	ufs_notify_ready(d);

	main_loop(d, &sigs);
	stop_workers(d);
	ret = __atomic_load_n(&d->worker_error, __ATOMIC_RELAXED);
	if (ufs_mount_listed(&d->mnt)) {
		/*
		 * The connection ended, yet nobody unmounted: the kernel aborted
		 * it (libfuse's unmount skips a dead connection, so take it away
		 * here, or every access would answer ENOTCONN until an operator
		 * did).  A fatal error was logged where it happened.
		 */
		if (!__atomic_load_n(&d->fatal, __ATOMIC_ACQUIRE))
			ufs_err("the kernel aborted the connection of %s while mounted: %s",
				d->mountpoint, abort_cause(d));
		if (!ret)
			ret = -ECONNABORTED;
		if (ufs_mount_detach(&d->mnt))
			ufs_err("cannot detach the dead mount %s: take it away with fusermount3 -uz",
				d->mnt.real);
		else
			ufs_info("detached the dead mount %s", d->mnt.real);
	}
	ufs_unmount(&d->mnt);
	ufs_mount_release(&d->mnt);
	ufs_fs_destroy(&d->fs);
	ufs_info("%s unmounted, exiting", d->mountpoint);
	return ret ? 1 : 0;

err_workers:
	abandon_start(d);
err_unmount:
	ufs_unmount(&d->mnt);
	ufs_mount_release(&d->mnt);
err_fs:
	ufs_fs_destroy(&d->fs);
	daemonize_finish(ready_fd, 1);
	return 1;
}

int main(int argc, char **argv)
{
	static struct ufs_daemon daemon;
	struct ufs_daemon *d = &daemon;
	struct cli cli = { 0 };
	int ret;

	ufs_config_defaults(&d->cfg);
	ret = parse_args(d, &cli, argc, argv);
	if (ret)
		return ret;
	if (cli.check_config)
		return check_config_only(cli.check_config);
	if (cli.stats_mountpoint)
		return print_stats(d, cli.stats_mountpoint);
	if (load_config(&d->cfg))
		return 1;
	if (cli.print_config) {
		ufs_config_print(&d->cfg, stdout);
		return 0;
	}
	ufs_log_set_level(d->cfg.log_level);
	ufs_notify_init();
	/* journald reads <N> priority prefixes from stderr, with or without -f. */
	if (ufs_notify_under_systemd())
		ufs_log_set_target(UFS_LOG_TARGET_JOURNAL);
	if (check_dir("source", d->source) || check_dir("mountpoint", d->mountpoint))
		return 1;
	raise_fd_limit();
	umask(0);	/* the client's mode is final; see ufs_umask_enter() */
	clock_gettime(CLOCK_REALTIME, &d->started);
	ufs_info("uringfs %s starting: %s on %s, config %s", PACKAGE_VERSION, d->source,
		 d->mountpoint, d->cfg.config_path);
	return run(d);
}
