/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef UFS_DISPATCH_H
#define UFS_DISPATCH_H

#include <sys/types.h>

#include "decode.h"
#include "req.h"

struct ufs_fs;

/*
 * Serve one request: decode, run the handler, and reply through
 * req->xops, now or (for a queued request) later.
 */
void ufs_dispatch(struct ufs_fs *fs, struct ufs_req *req, const struct ufs_msg *msg);

/* Reply res (payload length, or -errno) and release the request's references. */
void ufs_req_done(struct ufs_req *req, ssize_t res);

/*
 * The transport is sending req's reply now (or committing a no-reply
 * request): its duration since arrival goes to the request histogram.
 * Call before the reply overwrites req->in; a no-op for a request that
 * never reached the dispatcher.
 */
void ufs_req_replied(struct ufs_req *req);

#endif /* UFS_DISPATCH_H */
