// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * unit-filter - run a command under the system call filter of a systemd unit
 *
 * Usage: unit-filter --groups FILE [--record FILE] UNIT COMMAND [ARG...]
 *        unit-filter --groups FILE --print UNIT
 *
 * Reads SystemCallFilter= and SystemCallErrorNumber= from the [Service]
 * section of UNIT and builds the filter systemd would: an allow list of
 * @default plus every call named, each @group expanded from FILE (the
 * output of `systemd-analyze syscall-filter`, systemd's own tables), and
 * every other call failing with the unit's errno.  Names libseccomp does
 * not know, or that do not exist on this architecture, are skipped, as
 * systemd skips them.  Then no_new_privs is set (the unit's
 * NoNewPrivileges=yes; systemd sets it for any filter) and COMMAND is
 * executed in this process, so the harness sees the daemon's own pid.
 *
 * --print: print the calls the filter allows on this architecture, one
 * per line, sorted, and exit.
 * --record FILE: a supervisor process answers every refused call with the
 * same errno (seccomp user notification) and appends "NAME pid=PID
 * comm=COMM args=A0,A1,A2" to FILE.  The command sees exactly what it
 * would see under the unit, and the test sees what was refused.
 *
 * Only what uringfs@.service uses is modelled: an allow list of names and
 * @groups, and an errno name or number (or "kill").  A deny list (~),
 * NAME:ERRNO and "log" stop the helper with an error, so a unit that
 * starts using them fails the test instead of being tested wrongly.  The
 * unit's other settings made of seccomp filters (RestrictAddressFamilies=,
 * RestrictNamespaces=, MemoryDenyWriteExecute=, ...) are not modelled.
 *
 * Exit status: that of COMMAND; 2 when the unit or FILE cannot be used,
 * 127 when COMMAND cannot be executed.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_GROUP_DEPTH 16

struct names {
	char **v;
	size_t n, cap;
};

struct group {
	char *name;
	struct names members;
};

struct groups {
	struct group *v;
	size_t n, cap;
};

/* What the unit asks for. */
struct unit_filter {
	struct names items; /* as written: names and @groups */
	bool seen;
	bool kill; /* SystemCallErrorNumber= unset or "kill" */
	int err;
};

static const char *prog = "unit-filter";

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("out of memory");
	return p;
}

static void names_add(struct names *l, const char *s, size_t len)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n] = strndup(s, len);
	if (!l->v[l->n])
		die("out of memory");
	l->n++;
}

static void names_clear(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	l->n = 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* An errno name (EPERM) or number, as SystemCallErrorNumber= takes it. */
static int parse_errno(const char *s)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (!errno && end != s && !*end && n > 0 && n < 4096)
		return (int)n;
	for (int e = 1; e < 4096; e++) {
		const char *name = strerrorname_np(e);

		if (name && !strcmp(name, s))
			return e;
	}
	return -1;
}

static void unit_set_filter(struct unit_filter *uf, const char *unit, char *value)
{
	char *save, *word;

	/* systemd: an empty assignment resets the list. */
	if (!*value) {
		names_clear(&uf->items);
		uf->seen = false;
		return;
	}
	if (*value == '~')
		die("%s: SystemCallFilter=~... (a deny list) is not modelled", unit);
	for (word = strtok_r(value, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
		if (strchr(word, ':'))
			die("%s: SystemCallFilter=%s (a per-call errno) is not modelled", unit,
			    word);
		names_add(&uf->items, word, strlen(word));
	}
	uf->seen = true;
}

static void unit_set_errno(struct unit_filter *uf, const char *unit, const char *value)
{
	if (!*value || !strcmp(value, "kill")) {
		uf->kill = true;
		return;
	}
	uf->err = parse_errno(value);
	if (uf->err < 0)
		die("%s: SystemCallErrorNumber=%s is not an errno this helper knows", unit, value);
	uf->kill = false;
}

/* The [Service] lines that make the filter; continuation lines joined. */
static void read_unit(const char *path, struct unit_filter *uf)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, *full = NULL;
	size_t cap = 0, full_len = 0;
	bool service = false;
	ssize_t n;

	if (!f)
		die("%s: %s", path, strerror(errno));
	uf->kill = true;
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *s, *eq;

		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		full = xrealloc(full, full_len + n + 2);
		memcpy(full + full_len, line, n + 1);
		full_len += n;
		/* A trailing backslash continues the line, with a space. */
		if (full_len && full[full_len - 1] == '\\') {
			full[full_len - 1] = ' ';
			continue;
		}
		full_len = 0;
		s = trim(full);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			service = !strcmp(s, "[Service]");
			continue;
		}
		eq = strchr(s, '=');
		if (!service || !eq)
			continue;
		*eq = '\0';
		if (!strcmp(trim(s), "SystemCallFilter"))
			unit_set_filter(uf, path, trim(eq + 1));
		else if (!strcmp(trim(s), "SystemCallErrorNumber"))
			unit_set_errno(uf, path, trim(eq + 1));
	}
	free(line);
	free(full);
	fclose(f);
	if (!uf->seen)
		die("%s: no SystemCallFilter= allow list in [Service]", path);
}

/*
 * systemd-analyze syscall-filter prints each group as "@name" at the start
 * of a line, then its members indented, "# ..." comments among them, and a
 * blank line after it.
 */
static void read_groups(const char *path, struct groups *g)
{
	FILE *f = fopen(path, "r");
	struct group *cur = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (!f)
		die("%s: %s", path, strerror(errno));
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *s = trim(line);

		if (line[0] == '@') {
			if (g->n == g->cap) {
				g->cap = g->cap ? 2 * g->cap : 32;
				g->v = xrealloc(g->v, g->cap * sizeof(*g->v));
			}
			cur = &g->v[g->n++];
			memset(cur, 0, sizeof(*cur));
			cur->name = strdup(s);
			if (!cur->name)
				die("out of memory");
		} else if (!*s) {
			cur = NULL;
		} else if (cur && *s != '#' && isspace((unsigned char)line[0])) {
			names_add(&cur->members, s, strlen(s));
		}
	}
	free(line);
	fclose(f);
	if (!g->n)
		die("%s: no @group in it (not the output of systemd-analyze syscall-filter?)",
		    path);
}

static void expand(const struct groups *g, const char *item, struct names *out, int depth)
{
	if (item[0] != '@') {
		names_add(out, item, strlen(item));
		return;
	}
	if (depth > MAX_GROUP_DEPTH)
		die("%s: groups nested more than %d deep", item, MAX_GROUP_DEPTH);
	for (size_t i = 0; i < g->n; i++) {
		if (strcmp(g->v[i].name, item))
			continue;
		for (size_t j = 0; j < g->v[i].members.n; j++)
			expand(g, g->v[i].members.v[j], out, depth + 1);
		return;
	}
	die("%s: no such group in the systemd-analyze syscall-filter output", item);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The allowed calls that exist here: sorted, unique, resolvable. */
static void allowed_calls(const struct unit_filter *uf, const struct groups *g, struct names *out)
{
	struct names all = { 0 };
	size_t i, k = 0;

	/* systemd adds @default to every allow list. */
	expand(g, "@default", &all, 0);
	for (i = 0; i < uf->items.n; i++)
		expand(g, uf->items.v[i], &all, 0);
	qsort(all.v, all.n, sizeof(*all.v), cmp_str);
	for (i = 0; i < all.n; i++) {
		/* Negative: a pseudo number, no such call on this architecture. */
		if ((k && !strcmp(out->v[k - 1], all.v[i])) ||
		    seccomp_syscall_resolve_name(all.v[i]) < 0)
			continue;
		names_add(out, all.v[i], strlen(all.v[i]));
		k++;
	}
	names_clear(&all);
	free(all.v);
}

static bool allows(const struct names *calls, const char *name)
{
	return bsearch(&name, calls->v, calls->n, sizeof(*calls->v), cmp_str) != NULL;
}

/* Answer every notification with -err and note it in record_fd. */
static void __attribute__((noreturn)) supervise(int sock, int record_fd, int err)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct seccomp_notif_resp *resp;
	struct seccomp_notif *req;
	struct iovec iov;
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	char byte, comm[64], path[64], line[512];
	int fd, cfd;
	ssize_t n;

	iov.iov_base = &byte;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	errno = EPROTO; /* the helper exited without sending the listener */
	if (recvmsg(sock, &msg, 0) != 1 || !(cm = CMSG_FIRSTHDR(&msg)) ||
	    cm->cmsg_type != SCM_RIGHTS)
		goto fail;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	close(sock);
	if (seccomp_notify_alloc(&req, &resp))
		goto fail;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		char *name;

		/* POLLHUP: every task under the filter is gone. */
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (!(p.revents & POLLIN))
			_exit(0);
		memset(req, 0, sizeof(*req));
		if (seccomp_notify_receive(fd, req)) {
			/* ENOENT: the caller died meanwhile. */
			if (errno == ENOENT || errno == EINTR)
				continue;
			goto fail;
		}
		resp->id = req->id;
		resp->val = 0;
		resp->error = -err;
		resp->flags = 0;
		name = seccomp_syscall_resolve_num_arch(req->data.arch, req->data.nr);
		snprintf(path, sizeof(path), "/proc/%u/comm", req->pid);
		comm[0] = '\0';
		cfd = open(path, O_RDONLY | O_CLOEXEC);
		if (cfd >= 0) {
			n = read(cfd, comm, sizeof(comm) - 1);
			comm[n > 0 ? n : 0] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			close(cfd);
		}
		n = snprintf(line, sizeof(line), "%s pid=%u comm=%s args=%#llx,%#llx,%#llx\n",
			     name ?: "?", req->pid, comm, (unsigned long long)req->data.args[0],
			     (unsigned long long)req->data.args[1],
			     (unsigned long long)req->data.args[2]);
		free(name);
		if (write(record_fd, line, n) != n)
			goto fail;
		seccomp_notify_respond(fd, resp); /* ENOENT: the caller died */
	}
fail:
	snprintf(line, sizeof(line), "unit-filter supervisor failed: %s\n", strerror(errno));
	if (write(record_fd, line, strlen(line)) < 0) {
		/* Nothing left to report to. */
	}
	_exit(1);
}

/*
 * The supervisor must not be the command's child (the daemon would see it
 * exit), so it is a grandchild, and it runs this program afresh so that
 * its command line does not name the daemon or the mount point (tests look
 * for the daemon by those).  Returns the socket to send it the listener on.
 */
static int start_supervisor(const char *record, int err)
{
	int sv[2], record_fd, status;
	pid_t pid;

	record_fd = open(record, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (record_fd < 0)
		die("%s: %s", record, strerror(errno));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		die("socketpair: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		char fds[3][16];
		int null = open("/dev/null", O_RDWR);

		/* Hold nothing of the command's: no output pipe, no cwd. */
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
		    chdir("/"))
			_exit(1);
		close(sv[0]);
		setsid();
		if (fork())
			_exit(0);
		snprintf(fds[0], sizeof(fds[0]), "%d", sv[1]);
		snprintf(fds[1], sizeof(fds[1]), "%d", record_fd);
		snprintf(fds[2], sizeof(fds[2]), "%d", err);
		execl("/proc/self/exe", prog, "--supervise", fds[0], fds[1], fds[2], (char *)NULL);
		_exit(1);
	}
	close(sv[1]);
	close(record_fd);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the supervisor did not start");
	/* Not for the command. */
	if (fcntl(sv[0], F_SETFD, FD_CLOEXEC))
		die("fcntl: %s", strerror(errno));
	return sv[0];
}

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 0;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	/* Already under the filter: an error here cannot be reported anywhere safe. */
	if (sendmsg(sock, &msg, 0) != 1)
		_exit(2);
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr,
		"usage: %s --groups FILE [--record FILE] UNIT COMMAND [ARG...]\n"
		"       %s --groups FILE --print UNIT\n",
		prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *groups_file = NULL, *record = NULL, *unit;
	struct unit_filter uf = { 0 };
	struct groups groups = { 0 };
	struct names calls = { 0 };
	scmp_filter_ctx ctx;
	bool print = false;
	int i, sock = -1;
	uint32_t deny;

	if (argc == 5 && !strcmp(argv[1], "--supervise"))
		supervise(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--groups") && i + 1 < argc)
			groups_file = argv[++i];
		else if (!strcmp(argv[i], "--record") && i + 1 < argc)
			record = argv[++i];
		else if (!strcmp(argv[i], "--print"))
			print = true;
		else
			usage();
	}
	if (!groups_file || i >= argc || (print ? i + 1 != argc : i + 1 >= argc))
		usage();
	unit = argv[i++];

	read_unit(unit, &uf);
	read_groups(groups_file, &groups);
	allowed_calls(&uf, &groups, &calls);
	if (print) {
		for (size_t j = 0; j < calls.n; j++)
			printf("%s\n", calls.v[j]);
		return fflush(stdout) ? 2 : 0;
	}

	if (record) {
		if (uf.kill)
			die("%s: --record needs an errno, not SystemCallErrorNumber=kill", unit);
		/* Between loading the filter and exec the helper itself sends and closes. */
		if (!allows(&calls, "sendmsg") || !allows(&calls, "close"))
			die("%s: --record needs sendmsg and close allowed", unit);
		if (seccomp_api_get() < 5)
			die("--record: libseccomp or the kernel has no user notification");
		sock = start_supervisor(record, uf.err);
		deny = SCMP_ACT_NOTIFY;
	} else {
		deny = uf.kill ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_ERRNO(uf.err);
	}
	ctx = seccomp_init(deny);
	if (!ctx)
		die("seccomp_init failed");
	for (size_t j = 0; j < calls.n; j++) {
		int nr = seccomp_syscall_resolve_name(calls.v[j]);
		int ret = seccomp_rule_add_exact(ctx, SCMP_ACT_ALLOW, nr, 0);

		/* -EDOM: not a call of this architecture; systemd skips those too. */
		if (ret && ret != -EDOM)
			die("allowing %s: %s", calls.v[j], strerror(-ret));
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		die("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	if (seccomp_load(ctx))
		die("seccomp_load failed");
	if (record) {
		int fd = seccomp_notify_fd(ctx);

		if (fd < 0)
			_exit(2);
		send_fd(sock, fd);
		close(fd);
		close(sock);
	}
	execvp(argv[i], argv + i);
	fprintf(stderr, "%s: %s: %s\n", prog, argv[i], strerror(errno));
	return 127;
}
