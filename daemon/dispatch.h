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

#endif /* UFS_DISPATCH_H */
