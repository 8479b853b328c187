/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The /dev/fuse transport: worker threads reading requests with read(2) and
 * answering with writev(2), each on its own descriptor of the connection.
 * With io_uring it stays on as the connection's /dev/fuse reader for what
 * never goes over the ring: FORGET, BATCH_FORGET, INTERRUPT.
 */
#ifndef UFS_DEV_H
#define UFS_DEV_H

#include "fuse_abi.h"

struct ufs_daemon;
struct ufs_worker;

/* Clone the connection's descriptor (FUSE_DEV_IOC_CLONE), or dup it. */
int ufs_dev_clone(int fuse_fd);

/* Start serving on worker w with descriptor fd (taken over). */
int ufs_dev_worker_start(struct ufs_worker *w, int fd);
/* The worker's clone of the connection, or -1 if it has none. */
int ufs_dev_worker_fd(const struct ufs_worker *w);

/* Join a started worker and free its state. */
void ufs_dev_worker_join(struct ufs_worker *w);

/* Read the INIT request from fd into buf; returns its length or -errno. */
ssize_t ufs_dev_read_init(int fd, void *buf, size_t size);

/* Write a reply for unique to fd. */
int ufs_dev_write_reply(int fd, uint64_t unique, int error, const void *payload, size_t len);
/* Send a notification (FUSE_NOTIFY_*) to the kernel: always on /dev/fuse. */
int ufs_dev_write_notify(int fd, int code, const void *payload, size_t len);

#endif /* UFS_DEV_H */
