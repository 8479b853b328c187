#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite over io_uring with one worker serving every CPU's queue and
# a single entry per queue.  The million-file lookup runs once, in uring.sh;
# here 50,000 (still over RLIMIT_NOFILE).
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}
exec "$(dirname "$0")/uring.sh" uring-small
