// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Handing a live mount over (handover.h): the take-over socket, both ends.
 *
 * The take-over exchange, over a SOCK_SEQPACKET socket whose path follows
 * from the mount point and the user: in /run/uringfs (root) or
 * $XDG_RUNTIME_DIR/uringfs, a directory only the user can write to, so
 * nobody else can take the name first (an abstract name would be anyone's),
 * and mode 0600; a peer of another user is refused at both ends anyway:
 *
 *	successor			running daemon
 *	HELLO  ----------------------->	pauses its workers at a clean point
 *	       <-----------------------	STATE: the connection, the record, clones
 *	       <-----------------------	FILES: open files' descriptors, in batches
 *	       <-----------------------	LOCKS: POSIX lock owners' descriptions
 *					and their keys, in batches (if any)
 *	       <-----------------------	END
 *	restores, starts serving
 *	READY  ----------------------->	exits without unmounting
 *	(or FAIL: why) --------------->	(or serves on)
 *	waits for the socket to close, then has the kernel resend
 *
 * Every message is one struct handover_msg, of the size older builds send:
 * an unknown type, a size or magic that does not match ends the exchange
 * (EPROTO).  HELLO says what the successor can take (FEATURE_*): one that
 * cannot take LOCKS (an older build) is refused while any owner holds a
 * description, rather than have the locks go with this daemon.  LOCKS
 * carries its own format version and entry size, checked by the successor.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon.h"
#include "file_table.h"
#include "handover_socket.h"
#include "handover_status.h"
#include "log.h"
#include "mount.h"
#include "store_lock.h"
#include "transport.h"

#define HANDOVER_MAGIC 0x48534655u	/* "UFSH" */
#define FDS_PER_MSG 250			/* under SCM_MAX_FD (253) */
#define PAUSE_TIMEOUT_MS 30000		/* a worker finishing its request */
#define RESTORE_TIMEOUT_MS 300000	/* the successor reopening every file */
#define EXIT_TIMEOUT_MS 30000		/* the old daemon leaving after READY */
#define LOCKS_PER_MSG 31		/* lock owners a LOCKS message carries */
#define LOCKS_VERSION 1			/* of struct handover_lock */
#define FEATURE_LOCKS 1u		/* HELLO, index[0]: the successor takes LOCKS */
#define EXIT_STEP_MS 50			/* how often the successor looks at its workers meanwhile */

enum msg_type {
	MSG_HELLO = 1,
	MSG_STATE,	/* fds: fuse, record, then clones */
	MSG_FILES,	/* fds: backing files, at index[] */
	MSG_END,
	MSG_READY,
	MSG_FAIL,	/* text: why */
	MSG_LOCKS,	/* fds: lock owners' descriptions, keyed by locks[] */
};

/* A POSIX lock owner (fs_lock.h) in a LOCKS message; its descriptor at the same position. */
struct handover_lock {
	uint64_t nodeid;
	uint64_t owner;
	uint64_t fh;
	uint32_t uid;
	int32_t pid;
};

struct handover_msg {
	uint32_t magic;
	uint32_t type;
	uint32_t count;
	uint32_t pid;
	union {
		struct {
			uint32_t index[FDS_PER_MSG];
			char text[256];
		};
		struct {			/* MSG_LOCKS */
			uint32_t version;	/* LOCKS_VERSION */
			uint32_t lock_size;	/* sizeof(struct handover_lock) */
			struct handover_lock locks[LOCKS_PER_MSG];
		};
	};
};

_Static_assert(sizeof(struct handover_msg) == 1272, "the message size older builds speak");
_Static_assert(8 + LOCKS_PER_MSG * sizeof(struct handover_lock) <= FDS_PER_MSG * sizeof(uint32_t),
	       "a LOCKS message leaves text alone");

/* ---- the socket ---- */

/* "<runtime dir>/takeover-<uid>-<hash of the mount point's real path>" */
static int socket_name(const char *real, struct sockaddr_un *sa, bool make_dir)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	return ufs_handover_runtime_name(real, "takeover", sa->sun_path, sizeof(sa->sun_path),
					 make_dir);
}

/*
 * A non-blocking connect to the take-over socket of real, of our own user:
 * a listener whose backlog is full answers EAGAIN at once instead of
 * holding the caller.  Returns the socket, or -errno.
 */
static int socket_connect(const char *real)
{
	struct sockaddr_un sa;
	int fd, ret = socket_name(real, &sa, false);

	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (fcntl(fd, F_SETFL, 0)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static bool peer_is_us(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && cred.uid == geteuid();
}

static int wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int n;

	do {
		n = poll(&p, 1, timeout_ms);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n == 0 ? -ETIMEDOUT : 0;
}

static int send_msg(int sock, const struct handover_msg *m, const int *fds, unsigned int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)] = { 0 };
	struct iovec iov = { .iov_base = (void *)m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	return n == sizeof(*m) ? 0 : n < 0 ? -errno : -EPROTO;
}

/* One message within timeout_ms; its descriptors in fds (closed on error). */
static int recv_msg(int sock, struct handover_msg *m, int *fds, unsigned int *nfds, int timeout_ms)
{
	char cbuf[CMSG_SPACE(sizeof(int) * FDS_PER_MSG)];
	struct iovec iov = { .iov_base = m, .iov_len = sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;
	int ret;

	*nfds = 0;
	ret = wait_readable(sock, timeout_ms);
	if (ret)
		return ret;
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			*nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds, CMSG_DATA(c), *nfds * sizeof(int));
		}
	}
	if (n == 0)
		return -ECONNRESET;
	if (n != sizeof(*m) || m->magic != HANDOVER_MAGIC || (mh.msg_flags & MSG_CTRUNC)) {
		for (unsigned int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		/* Descriptors that did not fit under our RLIMIT_NOFILE (scm_detach_fds). */
		return n == sizeof(*m) && m->magic == HANDOVER_MAGIC ? -EMFILE : -EPROTO;
	}
	m->text[sizeof(m->text) - 1] = '\0';
	return 0;
}

static int send_type(int sock, enum msg_type type, const char *text)
{
	struct handover_msg m = { .magic = HANDOVER_MAGIC, .type = type, .pid = getpid() };

	if (text)
		snprintf(m.text, sizeof(m.text), "%s", text);
	return send_msg(sock, &m, NULL, 0);
}

/* ---- the running daemon ---- */

/* Bind sa, taking the name over from a daemon that died without removing it. */
static int socket_bind(int fd, const struct sockaddr_un *sa, const char *real)
{
	int other;

	if (!bind(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		return 0;
	if (errno != EADDRINUSE)
		return -errno;
	other = socket_connect(real);
	if (other >= 0 || other == -EAGAIN) {
		if (other >= 0)
			close(other);
		return -EADDRINUSE;	/* a daemon listens there */
	}
	if (unlink(sa->sun_path) && errno != ENOENT)
		return -errno;
	return bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : 0;
}

int ufs_handover_listen(struct ufs_daemon *d)
{
	struct sockaddr_un sa;
	struct stat st;
	int fd = -1, ret;

	ret = socket_name(d->mnt.real, &sa, true);
	if (!ret) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		/* The socket's mode before bind is the file's (unix_bind): ours alone. */
		ret = fd < 0 || fchmod(fd, 0600) ? -errno : socket_bind(fd, &sa, d->mnt.real);
	}
	if (!ret)
		ret = listen(fd, 1) || lstat(sa.sun_path, &st) ? -errno : 0;
	if (ret) {
		ufs_warn("take-over socket for %s: %s: uringfs --take-over cannot reach this daemon",
			 d->mnt.real, strerror(-ret));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->handover.takeover_ino = st.st_ino;
	d->handover.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd;
}

void ufs_handover_unlisten(struct ufs_daemon *d, int fd)
{
	struct sockaddr_un sa;
	struct stat st;

	if (fd < 0)
		return;
	if (d->handover.spare_fd >= 0)
		close(d->handover.spare_fd);
	d->handover.spare_fd = -1;
	/* Unless a successor has bound the name anew since. */
	if (!socket_name(d->mnt.real, &sa, false) && !lstat(sa.sun_path, &st) &&
	    st.st_ino == d->handover.takeover_ino)
		unlink(sa.sun_path);
	close(fd);
}

struct files_batch {
	int sock;
	struct handover_msg m;
	int fds[FDS_PER_MSG];
	int error;
};

static int files_flush(struct files_batch *b)
{
	if (!b->m.count || b->error)
		return b->error;
	b->error = send_msg(b->sock, &b->m, b->fds, b->m.count);
	b->m.count = 0;
	return b->error;
}

static void file_add(void *arg, uint32_t index, int fd)
{
	struct files_batch *b = arg;

	b->m.index[b->m.count] = index;
	b->fds[b->m.count++] = fd;
	if (b->m.count == FDS_PER_MSG)
		files_flush(b);
}

/* The POSIX lock owners' descriptions and their keys (fs_lock.c), in batches. */
static int locks_send(struct ufs_daemon *d, int sock)
{
	struct ufs_lock_owner_state *v;
	size_t n;
	int ret = ufs_lock_owners_collect(&d->fs, &v, &n);

	for (size_t i = 0; !ret && i < n; i += LOCKS_PER_MSG) {
		struct handover_msg m = { .magic = HANDOVER_MAGIC, .type = MSG_LOCKS };
		int fds[LOCKS_PER_MSG];

		m.version = LOCKS_VERSION;
		m.lock_size = sizeof(struct handover_lock);
		for (; m.count < LOCKS_PER_MSG && i + m.count < n; m.count++) {
			const struct ufs_lock_owner_state *s = &v[i + m.count];
			struct handover_lock *l = &m.locks[m.count];

			l->nodeid = s->nodeid;
			l->owner = s->owner;
			l->fh = s->fh;
			l->uid = s->uid;
			l->pid = s->pid;
			fds[m.count] = s->fd;
		}
		ret = send_msg(sock, &m, fds, m.count);
	}
	ufs_lock_owners_free(v, n);
	return ret;
}

/* Everything but the verdict; 0 or a negative errno with why set. */
static int handover_send(struct ufs_daemon *d, int sock, char *why, size_t len)
{
	struct handover_msg m = { .magic = HANDOVER_MAGIC, .type = MSG_STATE, .pid = getpid() };
	int fds[2 + FDS_PER_MSG];
	struct files_batch b = { .sock = sock };
	unsigned int n = 0;
	int ret;

	fds[n++] = d->fuse_fd;
	fds[n++] = d->record.fd;
	/* index[0] clones of the connection, then index[1] rings' memory files */
	m.index[0] = ufs_transport_clone_fds(d, fds + n, FDS_PER_MSG - n);
	n += m.index[0];
	m.index[1] = ufs_transport_ring_fds(d, fds + n, FDS_PER_MSG - n);
	n += m.index[1];
	m.count = n;
	ret = send_msg(sock, &m, fds, n);
	if (!ret) {
		b.m = (struct handover_msg){ .magic = HANDOVER_MAGIC, .type = MSG_FILES };
		ufs_file_for_each_fd(&d->fs.files, file_add, &b);
		ret = files_flush(&b);
	}
	if (!ret)
		ret = locks_send(d, sock);
	if (!ret)
		ret = send_type(sock, MSG_END, NULL);
	if (ret)
		snprintf(why, len, "sending the descriptors: %s", strerror(-ret));
	return ret;
}

/*
 * accept4() failed for want of a descriptor: the successor would wait
 * unanswered, and the pending connection keeps the socket readable, so the
 * main loop would spin.  The spare descriptor, closed for the moment, lets
 * it in to hear why; else a pause stops the spin until a descriptor frees.
 */
static void refuse_out_of_fds(struct ufs_daemon *d, int listen_fd, int err)
{
	struct rlimit rl = { 0 };
	char why[200];
	int sock = -1;

	getrlimit(RLIMIT_NOFILE, &rl);
	snprintf(why, sizeof(why), "the serving daemon is out of descriptors (%s, RLIMIT_NOFILE %llu)",
		 strerror(err), (unsigned long long)rl.rlim_cur);
	ufs_log_once(UFS_LOG_WARN, "take-over refused: %s", why);
	if (d->handover.spare_fd >= 0) {
		close(d->handover.spare_fd);
		sock = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (sock >= 0) {
			struct handover_msg m;
			int fds[FDS_PER_MSG];
			unsigned int nfds = 0;

			/* Its HELLO first: a close before it is read is EPIPE to its send. */
			if (peer_is_us(sock) && !recv_msg(sock, &m, fds, &nfds, 1000) &&
			    m.type == MSG_HELLO)
				send_type(sock, MSG_FAIL, why);
			for (unsigned int i = 0; i < nfds; i++)
				close(fds[i]);
			close(sock);
		}
		d->handover.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (sock < 0)
		poll(NULL, 0, 100);
}

bool ufs_handover_serve(struct ufs_daemon *d, int listen_fd)
{
	struct handover_msg m;
	unsigned int nfds;
	char why[300] = "";
	int sock, ret, fds[FDS_PER_MSG];
	uint64_t lock_owners;
	uint32_t features;
	bool took = false;

	sock = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (sock < 0 && (errno == EMFILE || errno == ENFILE))
		refuse_out_of_fds(d, listen_fd, errno);
	if (sock < 0)
		return false;
	if (!peer_is_us(sock)) {
		ufs_log_once(UFS_LOG_WARN, "take-over: refused a peer that is not uid %u",
			     (unsigned int)geteuid());
		close(sock);
		return false;
	}
	ret = recv_msg(sock, &m, fds, &nfds, 5000);
	for (unsigned int i = 0; i < nfds; i++)
		close(fds[i]);
	if (ret || m.type != MSG_HELLO) {
		close(sock);
		return false;
	}
	features = m.index[0];
	ufs_info("take-over: pid %u asks for %s", m.pid, d->mountpoint);
	if (!ufs_record_kept(&d->record)) {
		snprintf(why, sizeof(why), "this daemon keeps no hand-over record (handover=off)");
		send_type(sock, MSG_FAIL, why);
		ufs_warn("take-over by pid %u refused: %s", m.pid, why);
		close(sock);
		return false;
	}
	ret = ufs_transport_pause(d, PAUSE_TIMEOUT_MS, why, sizeof(why));
	if (ret) {
		send_type(sock, MSG_FAIL, why);
		ufs_warn("take-over by pid %u refused: %s", m.pid, why);
		close(sock);
		return false;
	}
	/*
	 * POSIX locks are held on the owners' own descriptions (fs_lock.c),
	 * which LOCKS passes on; a successor that does not take them (an older
	 * build) would let the locks go with this daemon while their holders
	 * think they hold them.  Paused, no owner comes or goes.
	 */
	lock_owners = __atomic_load_n(&d->fs.lock_owners, __ATOMIC_ACQUIRE);
	if (lock_owners && !(features & FEATURE_LOCKS)) {
		snprintf(why, sizeof(why), "%llu POSIX lock owner%s hold%s locks through the mount "
			 "(posix_locks), which the successor (an older build) cannot keep: try "
			 "again once they unlock", (unsigned long long)lock_owners,
			 lock_owners == 1 ? "" : "s", lock_owners == 1 ? "s" : "");
		send_type(sock, MSG_FAIL, why);
		ufs_transport_resume(d);
		ufs_warn("take-over by pid %u refused: %s", m.pid, why);
		close(sock);
		return false;
	}
	/* Paused, it writes no more records: the successor locks the store. */
	ufs_store_unlock(&d->store);
	ret = handover_send(d, sock, why, sizeof(why));
	if (!ret) {
		ret = recv_msg(sock, &m, fds, &nfds, RESTORE_TIMEOUT_MS);
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		if (ret)
			snprintf(why, sizeof(why), "no word from the successor: %s", strerror(-ret));
		else if (m.type == MSG_FAIL)
			snprintf(why, sizeof(why), "%s", m.text);
		else
			took = m.type == MSG_READY;
	}
	if (took) {
		ufs_transport_handed_over(d);
		ufs_info("handed %s over to pid %u: exiting without unmounting", d->mountpoint,
			 m.pid);
		/* The socket closes when this process goes: the successor waits for that. */
		return true;
	}
	ufs_store_relock(&d->store);
	ufs_transport_resume(d);
	ufs_warn("take-over failed (%s): serving %s on", why, d->mountpoint);
	close(sock);
	return false;
}

/* ---- the successor ---- */

static int file_fds_put(struct ufs_inherit *in, uint32_t index, int fd)
{
	if (index >= UFS_RECORD_FILES) {
		close(fd);
		return -EINVAL;	/* no fh of ours has such an index */
	}
	if (index >= in->nfile_fds) {
		uint32_t n = index + 1 > 2 * in->nfile_fds ? index + 1 : 2 * in->nfile_fds;
		int *p = realloc(in->file_fds, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		for (uint32_t i = in->nfile_fds; i < n; i++)
			p[i] = -1;
		in->file_fds = p;
		in->nfile_fds = n;
	}
	if (in->file_fds[index] >= 0)
		close(in->file_fds[index]);
	in->file_fds[index] = fd;
	return 0;
}

static int take_state(struct ufs_inherit *in, const struct handover_msg *m, int *fds,
		      unsigned int nfds)
{
	unsigned int ndev = m->index[0], nring = m->index[1];

	if (nfds < 2 || nfds != m->count || ndev > UFS_INHERIT_DEV_MAX ||
	    nring > UFS_INHERIT_RING_MAX || 2 + ndev + nring != nfds) {
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		return -EPROTO;
	}
	in->fuse_fd = fds[0];
	in->record_fd = fds[1];
	for (unsigned int i = 0; i < ndev; i++)
		in->dev_fds[in->ndev++] = fds[2 + i];
	for (unsigned int i = 0; i < nring; i++)
		in->ring_fds[in->nring++] = fds[2 + ndev + i];
	return 0;
}

/* -EPROTONOSUPPORT, with why set: a format this build does not read. */
static int take_locks(struct ufs_inherit *in, const struct handover_msg *m, int *fds,
		      unsigned int nfds, char *why, size_t why_len)
{
	uint32_t want = in->nlocks + nfds;
	int ret =
		nfds == m->count && nfds <= LOCKS_PER_MSG && want <= UFS_RECORD_FILES ? 0 : -EPROTO;

	if (m->version != LOCKS_VERSION || m->lock_size != sizeof(struct handover_lock)) {
		snprintf(why, why_len, "the running daemon hands POSIX lock owners over in format "
			 "%u (entries of %u bytes), this build reads format %u (%zu bytes)",
			 m->version, m->lock_size, LOCKS_VERSION, sizeof(struct handover_lock));
		ret = -EPROTONOSUPPORT;
	}
	if (!ret && want > in->locks_cap) {
		uint32_t cap = want > 2 * in->locks_cap ? want : 2 * in->locks_cap;
		struct ufs_lock_owner_state *p = realloc(in->locks, cap * sizeof(*p));

		if (p) {
			in->locks = p;
			in->locks_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	for (unsigned int i = 0; i < nfds; i++) {
		struct ufs_lock_owner_state *s;
		const struct handover_lock *l;

		if (ret) {
			close(fds[i]);
			continue;
		}
		s = &in->locks[in->nlocks];
		l = &m->locks[i];
		s->nodeid = l->nodeid;
		s->owner = l->owner;
		s->fh = l->fh;
		s->uid = l->uid;
		s->pid = l->pid;
		s->fd = fds[i];
		in->nlocks++;
	}
	return ret;
}

static int take_files(struct ufs_inherit *in, const struct handover_msg *m, int *fds,
		      unsigned int nfds)
{
	int ret = nfds == m->count && nfds <= FDS_PER_MSG ? 0 : -EPROTO;

	for (unsigned int i = 0; i < nfds; i++) {
		if (!ret)
			ret = file_fds_put(in, m->index[i], fds[i]);
		else
			close(fds[i]);
	}
	return ret;
}

bool ufs_handover_served(const char *real)
{
	int fd = socket_connect(real);

	/*
	 * Not served only on proof: a socket file nobody listens on is what a
	 * daemon that died leaves.  No file at all may be a daemon that could
	 * not make one (no runtime directory): served, for all we know.
	 */
	if (fd == -ECONNREFUSED)
		return false;
	if (fd >= 0)
		close(fd);
	return true;
}

/* HELLO, saying what this build can take. */
static int send_hello(int sock)
{
	struct handover_msg m = { .magic = HANDOVER_MAGIC, .type = MSG_HELLO, .pid = getpid() };

	m.index[0] = FEATURE_LOCKS;
	return send_msg(sock, &m, NULL, 0);
}

int ufs_handover_request(const char *mountpoint, struct ufs_inherit *in, char *why,
			 size_t why_len)
{
	char real[PATH_MAX];
	struct handover_msg m;
	int fds[FDS_PER_MSG], ret;
	unsigned int nfds;

	ret = ufs_mount_real_path(mountpoint, real, sizeof(real));
	if (ret) {
		snprintf(why, why_len, "%s: %s", mountpoint, strerror(-ret));
		return ret;
	}
	in->conn = socket_connect(real);
	if (in->conn < 0) {
		ret = in->conn;
		snprintf(why, why_len, "no uringfs daemon of uid %u serves %s (%s)",
			 (unsigned int)geteuid(), real,
			 ret == -EAGAIN ? "its take-over socket is busy" : strerror(-ret));
		return ret;
	}
	if (!peer_is_us(in->conn)) {
		snprintf(why, why_len, "the take-over socket of %s belongs to another user", real);
		return -EPERM;
	}
	ret = send_hello(in->conn);
	while (!ret) {
		ret = recv_msg(in->conn, &m, fds, &nfds, PAUSE_TIMEOUT_MS + 5000);
		if (ret)
			break;
		if (m.type == MSG_END) {
			in->from = UFS_INHERIT_TAKEOVER;
			in->predecessor = m.pid;
			return in->fuse_fd >= 0 ? 0 : -EPROTO;
		}
		if (m.type == MSG_FAIL) {
			snprintf(why, why_len, "the running daemon refused: %s", m.text);
			return -EBUSY;
		}
		if (m.type == MSG_STATE && in->fuse_fd < 0)
			ret = take_state(in, &m, fds, nfds);
		else if (m.type == MSG_FILES)
			ret = take_files(in, &m, fds, nfds);
		else if (m.type == MSG_LOCKS)
			ret = take_locks(in, &m, fds, nfds, why, why_len);
		else
			ret = -EPROTO;
	}
	if (ret == -EPROTONOSUPPORT)
		return -EPROTO;	/* take_locks said why */
	snprintf(why, why_len, "take-over of %s: %s", real, strerror(-ret));
	return ret;
}

/*
 * READY sent: the old daemon closes the socket by exiting, and until then
 * it may still answer a request.  Waited for in steps, ending early once
 * *running (the successor's workers) is 0: the connection ended meanwhile
 * (an unmount), so nothing is left to send again, and the successor must
 * exit now rather than when the old daemon does (an ASan build's exit
 * under load takes seconds; a stuck one, EXIT_TIMEOUT_MS).
 */
static void predecessor_wait(struct ufs_inherit *in, const int *running)
{
	struct handover_msg m;
	unsigned int nfds;
	int fds[FDS_PER_MSG], ret, waited = 0;

	while (waited < EXIT_TIMEOUT_MS) {
		ret = recv_msg(in->conn, &m, fds, &nfds, EXIT_STEP_MS);
		for (unsigned int i = 0; i < nfds; i++)
			close(fds[i]);
		if (ret && ret != -ETIMEDOUT)
			return;	/* gone */
		if (running && !__atomic_load_n(running, __ATOMIC_ACQUIRE)) {
			ufs_info("take-over: the connection ended while the old daemon (pid %d) was "
				 "leaving: not waiting for it",
				 (int)in->predecessor);
			return;
		}
		if (ret)
			waited += EXIT_STEP_MS;
	}
	ufs_warn("take-over: the old daemon (pid %d) is still there %d s after handing over "
		 "(a request stuck in the backing file system?): serving anyway; a request it "
		 "still carries out may be served again",
		 (int)in->predecessor, EXIT_TIMEOUT_MS / 1000);
}

static void finish(struct ufs_inherit *in, const char *why, const int *running)
{
	if (in->conn < 0)
		return;
	if (!send_type(in->conn, why ? MSG_FAIL : MSG_READY, why) && !why)
		predecessor_wait(in, running);
	close(in->conn);
	in->conn = -1;
}

void ufs_handover_finish(struct ufs_inherit *in, const char *why)
{
	finish(in, why, NULL);
}

void ufs_handover_finish_serving(struct ufs_inherit *in, const int *running)
{
	finish(in, NULL, running);
}
