#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The mount suite against the ASan+UBSan build of the daemon.  A sanitizer
# report makes the daemon exit non-zero, which fails the case that ran it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

export UFS_DAEMON=${UFS_BUILDDIR:-$here/../..}/daemon/uringfs-asan
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:exitcode=66
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
exec /usr/bin/python3 "$here/run.py" --variant dev
