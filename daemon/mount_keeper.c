// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * auto_unmount's mount, made from a keeper process.
 *
 * With auto_unmount, libfuse gives fusermount3 one end of a socket and
 * keeps the other; fusermount3 mounts, sends the /dev/fuse descriptor over
 * it and stays behind until the socket closes, then unmounts if no daemon
 * serves.  But fusermount3 (libfuse 3.14; 3.15 detaches there) exits
 * without unmounting when it cannot send: a daemon killed while fusermount3
 * mounts left a dead mount behind.  So the daemon mounts through libfuse in
 * a child, the keeper, which holds libfuse's end for as long as the daemon
 * lives: fusermount3 can always send; the keeper passes the descriptor on
 * over a socket of its own with the daemon; when that socket closes (the
 * daemon exited or was killed, at any point) the keeper exits, closing
 * fusermount3's socket, and fusermount3 unmounts a mount nobody serves
 * (the keeper looks first, and detaches a dead one: keeper_unmount_dead).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "mount_keeper.h"

/* The keeper's libfuse error lines, sent to the daemon (the keeper's own copy). */
static char keeper_failure[256];

static void keeper_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(keeper_failure);
	char line[256];

	if (level > FUSE_LOG_ERR)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	if (n + 2 + strlen(line) >= sizeof(keeper_failure))
		return;
	snprintf(keeper_failure + n, sizeof(keeper_failure) - n, "%s%s", n ? "; " : "", line);
}

/* One message to the daemon: "y" with the descriptor, or "n" and the reason. */
static int keeper_send(int sock, int fd, const char *failure)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, buf[1 + sizeof(keeper_failure)];
	struct iovec iov = { .iov_base = buf };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cmsg;

	iov.iov_len = (size_t)snprintf(buf, sizeof(buf), "%c%s", fd >= 0 ? 'y' : 'n', failure);
	if (fd >= 0) {
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	return sendmsg(sock, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

/*
 * After the daemon, as its user: a mount it left dead (ENOTCONN, or
 * ECONNREFUSED when it died before INIT; served by a successor, or gone,
 * it opens) detached as fusermount3 would, which knows ENOTCONN alone.  For an
 * ordinary user's mount without allow_other, fusermount3 3.14 cannot tell:
 * it looks as root, whom the kernel refuses (EACCES; 3.15 looks again as
 * the owner).  And fusermount3 may look too early: the daemon's socket
 * closes as it exits, before its /dev/fuse descriptors and rings are let
 * go, while the connection still lives (seen in the emulated 7.3 guest).
 * The open here waits for the connection's end (its OPENDIR is answered by
 * nobody until then), so it sees what fusermount3 may not.
 */
static void keeper_unmount_dead(const char *mountpoint)
{
	char *argv[] = { "fusermount3", "-u", "-z", "-q", "--", (char *)mountpoint, NULL };
	pid_t pid;
	int fd;

	fd = open(mountpoint, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	/* ECONNREFUSED: the connection ended before INIT was answered (7.3). */
	if (fd >= 0 || (errno != ENOTCONN && errno != ECONNREFUSED))
		return;
	if (!posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
}

/* Descriptor target reads and writes nothing from now on. */
static void null_stdio(int target)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd >= 0 && fd != target) {
		dup2(fd, target);
		close(fd);
	}
}

/*
 * The keeper: nothing of the daemon's but its socket (and stdio) stays
 * open; libfuse's end of fusermount3's socket stays open until it exits.
 */
static void __attribute__((noreturn))
keeper_run(int sock, struct fuse_session *se, const char *mountpoint)
{
	char c;
	int fd;

	prctl(PR_SET_NAME, "uringfs-keeper");
	if (sock > 3)
		close_range(3, (unsigned int)sock - 1, 0);
	close_range((unsigned int)sock + 1, ~0U, 0);
	/*
	 * A session of its own: a signal to the caller's process group (a
	 * shell's ^C, kill -PGID) leaves auto_unmount's keeper alone.  Its
	 * stdin and stdout are nothing, its stderr the caller's only while
	 * fusermount3 may say why a mount failed: a caller reading the
	 * daemon's output to its end must not wait for the keeper's.
	 */
	setsid();
	null_stdio(STDIN_FILENO);
	null_stdio(STDOUT_FILENO);
	fuse_set_log_func(keeper_log);
	if (fuse_session_mount(se, mountpoint)) {
		keeper_send(sock, -1,
			    keeper_failure[0] ? keeper_failure : "libfuse gave no reason");
		_exit(1);
	}
	null_stdio(STDERR_FILENO);
	fd = fuse_session_fd(se);
	/* A daemon gone by now: this end closes below, and fusermount3 unmounts. */
	keeper_send(sock, fd, "");
	close(fd);
	for (;;) {
		ssize_t n = recv(sock, &c, 1, 0);

		if (!n || (n < 0 && errno != EINTR))
			break;
	}
	keeper_unmount_dead(mountpoint);
	_exit(0);
}

static int keeper_receive(int sock, char *why, size_t len)
{
	char cbuf[CMSG_SPACE(sizeof(int))], buf[1 + sizeof(keeper_failure)];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
	struct msghdr msg = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cbuf,
		.msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cmsg;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		snprintf(why, len, "the mount's keeper process ended: %s",
			 n ? strerror(errno) : "no word from it");
		return -1;
	}
	buf[n] = '\0';
	cmsg = CMSG_FIRSTHDR(&msg);
	if (cmsg && cmsg->cmsg_level == SOL_SOCKET && cmsg->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	if (buf[0] == 'y' && fd >= 0)
		return fd;
	if (fd >= 0)
		close(fd);
	snprintf(why, len, "%s", buf[0] == 'n' ? buf + 1 : "the mount's keeper said nothing");
	return -1;
}

int ufs_mount_keeper_start(struct ufs_mount_keeper *k, struct fuse_session *se,
			   const char *mountpoint, char *why, size_t len)
{
	int sv[2], fd;
	pid_t pid;

	k->pid = 0;
	k->sock = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		snprintf(why, len, "no socket for the mount's keeper: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, len, "cannot start the mount's keeper: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (!pid) {
		close(sv[0]);
		keeper_run(sv[1], se, mountpoint);
	}
	close(sv[1]);
	k->pid = pid;
	k->sock = sv[0];
	fd = keeper_receive(k->sock, why, len);
	if (fd < 0)
		ufs_mount_keeper_release(k);
	return fd;
}

void ufs_mount_keeper_release(struct ufs_mount_keeper *k)
{
	if (!k->pid)
		return;
	close(k->sock);
	/* It ends at once; not our child after a detach (process.c): init reaps it. */
	for (int i = 0; i < 100 && !waitpid(k->pid, NULL, WNOHANG); i++)
		usleep(10000);
	k->pid = 0;
	k->sock = -1;
}
