/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A ring worker's thread (ring_serve.c).
 */
#ifndef UFS_RING_SERVE_H
#define UFS_RING_SERVE_H

#include "ring_types.h"

void *ring_worker_main(void *arg);

#endif /* UFS_RING_SERVE_H */
