// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Description: open a file through io_uring straight into a registered-file
 * slot and close the slot again, as an io_uring program with fixed files
 * does.  The kernel then sends the FUSE server CREATE (or TMPFILE, or OPEN)
 * and later RELEASE, but never FLUSH: closing a slot drops the file without
 * filp_close(), and RELEASE names no inode.  That request order once left
 * the daemon's inode LRU corrupt.
 *
 *   fixed-open create PATH     O_CREAT|O_EXCL|O_RDWR, close
 *   fixed-open tmpfile DIR     O_TMPFILE|O_RDWR, close
 *   fixed-open write PATH      O_RDWR, write "data" at 0, close
 *
 * No request may touch the new inode between the open and the close: any
 * (a WRITE, a GETATTR) would hide what the first two test.
 *
 * Exit 0 on success, 1 with a message naming the failed step otherwise.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <liburing.h>
#include <stdio.h>
#include <string.h>

static int run_one(struct io_uring *ring, const char *step)
{
	struct io_uring_cqe *cqe;
	int ret = io_uring_submit_and_wait(ring, 1);

	if (ret < 0) {
		fprintf(stderr, "fixed-open: %s: submit: %s\n", step, strerror(-ret));
		return ret;
	}
	ret = io_uring_wait_cqe(ring, &cqe);
	if (ret < 0) {
		fprintf(stderr, "fixed-open: %s: wait: %s\n", step, strerror(-ret));
		return ret;
	}
	ret = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	if (ret < 0)
		fprintf(stderr, "fixed-open: %s: %s\n", step, strerror(-ret));
	return ret;
}

int main(int argc, char **argv)
{
	static const char data[] = "data";
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	int flags, ret;

	if (argc != 3) {
		fprintf(stderr, "usage: fixed-open create|tmpfile|write PATH\n");
		return 2;
	}
	if (!strcmp(argv[1], "create"))
		flags = O_CREAT | O_EXCL | O_RDWR;
	else if (!strcmp(argv[1], "tmpfile"))
		flags = O_TMPFILE | O_RDWR;
	else if (!strcmp(argv[1], "write"))
		flags = O_RDWR;
	else
		return 2;

	ret = io_uring_queue_init(4, &ring, 0);
	if (!ret)
		ret = io_uring_register_files_sparse(&ring, 1);
	if (ret) {
		fprintf(stderr, "fixed-open: ring set-up: %s\n", strerror(-ret));
		return 1;
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_openat_direct(sqe, AT_FDCWD, argv[2], flags, 0644, 0);
	if (run_one(&ring, "openat_direct") < 0)
		return 1;
	if (flags == O_RDWR) {
		sqe = io_uring_get_sqe(&ring);
		io_uring_prep_write(sqe, 0, data, 4, 0);
		sqe->flags |= IOSQE_FIXED_FILE;
		ret = run_one(&ring, "write");
		if (ret != 4) {
			if (ret >= 0)
				fprintf(stderr, "fixed-open: write: %d bytes, expected 4\n", ret);
			return 1;
		}
	}
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_close_direct(sqe, 0);
	if (run_one(&ring, "close_direct") < 0)
		return 1;
	io_uring_queue_exit(&ring);
	return 0;
}
