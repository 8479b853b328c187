// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which way copies run (copy.h, copy_probe.h): the configured mode against what the
 * kernel can do, and the behavioural self-test of the ring opcode.
 */
#include <errno.h>
#include <liburing.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "copy_probe.h"
#include "fuse_abi.h"

enum ufs_cfr_mode ufs_copy_mode_resolve(enum ufs_cfr_mode configured, bool ring_ok)
{
	if (configured == UFS_CFR_AUTO)
		return ring_ok ? UFS_CFR_RING : UFS_CFR_THREAD;
	return configured;
}

static int memfd_with(const char *name, const char *text)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (text && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/*
 * An opcode number alone is never trusted: a kernel could use 65 for
 * something else.  Copy 10 bytes from offset 3 of one memory file to
 * offset 2 of another and check the bytes and the count.
 */
static int selftest_copy(struct io_uring *ring, int src, int dst)
{
	static const char want[] = "\0\0" "uringfs-cf";
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	char got[sizeof(want) - 1];
	int ret;

	if (!sqe)
		return -EBUSY;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = UFS_IORING_OP_COPY_FILE_RANGE;
	sqe->fd = dst;
	sqe->off = 2;
	sqe->splice_fd_in = src;
	sqe->splice_off_in = 3;
	sqe->len = 10;
	ret = io_uring_submit_and_wait(ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (ret != 10)
		return ret < 0 ? ret : -EPROTO;
	if (pread(dst, got, sizeof(got), 0) != (ssize_t)sizeof(got) ||
	    memcmp(got, want, sizeof(got)))
		return -EPROTO;
	return 0;
}

int ufs_copy_ring_selftest(const char **why)
{
	struct io_uring_probe *probe;
	struct io_uring ring;
	int src = -1, dst = -1, ret;

	ret = io_uring_queue_init(4, &ring, 0);
	if (ret) {
		*why = "cannot create a ring";
		return ret;
	}
	probe = io_uring_get_probe_ring(&ring);
	if (!probe || probe->last_op < UFS_IORING_OP_COPY_FILE_RANGE ||
	    !(probe->ops[UFS_IORING_OP_COPY_FILE_RANGE].flags & IO_URING_OP_SUPPORTED)) {
		*why = "kernel has no IORING_OP_COPY_FILE_RANGE";
		ret = -EOPNOTSUPP;
		goto out;
	}
	src = memfd_with("uringfs-cfr-src", "...uringfs-cfr-selftest");
	dst = memfd_with("uringfs-cfr-dst", NULL);
	if (src < 0 || dst < 0) {
		*why = "cannot create memory files";
		ret = src < 0 ? src : dst;
		goto out;
	}
	ret = selftest_copy(&ring, src, dst);
	if (ret)
		*why = "opcode 65 did not copy as copy_file_range(2) would";
out:
	if (src >= 0)
		close(src);
	if (dst >= 0)
		close(dst);
	io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	return ret;
}
