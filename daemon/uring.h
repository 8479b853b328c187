/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The FUSE-over-io_uring transport.
 */
#ifndef UFS_URING_H
#define UFS_URING_H

#include <stdbool.h>
#include <stddef.h>

struct ufs_daemon;

/* Can this process create the rings the transport needs (SQE128)? */
bool ufs_uring_supported(void);

/*
 * Build the rings and register every queue.  Returns 0 once the ring is
 * ready, -EAGAIN if setup failed before any queue was registered (the
 * kernel then serves over /dev/fuse), -ENOTCONN if the connection ended
 * meanwhile (unmounted or aborted; not logged), or another error.
 */
int ufs_uring_start(struct ufs_daemon *d);

/*
 * A successor: map the predecessor's ring memory back where it was, as
 * early as possible (before other mappings can take those addresses).
 * 0, or -errno with why set.
 */
int ufs_uring_inherit_map(struct ufs_daemon *d, char *why, size_t why_len);
/* Once the predecessor has gone: answer what its entries hold, wake every queue. */
int ufs_uring_adopt(struct ufs_daemon *d);
/* The memory files a successor needs: the workers', and older ones still in use. */
unsigned int ufs_uring_mem_fds(struct ufs_daemon *d, int *fds, unsigned int max);

#endif /* UFS_URING_H */
