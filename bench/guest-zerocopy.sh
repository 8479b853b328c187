#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The zero-copy benchmark in the Linux 7.3 guest (under emulation: ratios are
# indicative, absolute numbers are not): native tmpfs, io_uring copying,
# kernel passthrough and io_uring zero copy, with 4 workers, 4 fio jobs at
# iodepth 16, direct random reads and writes of 1 MiB and 128 KiB.
#
#   bench/guest-zerocopy.sh [-t SECONDS] [extra daemon options]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runtime=5
if [[ ${1:-} == -t ]]; then
	runtime=$2
	shift 2
fi
opts=workers=4${1:+,$1}

exec "$top/tests/vm/run-guest.sh" --share "$top" --cwd "$top" --timeout 1800 -- \
	env UFS_BENCH_OPTS="$opts" "$top/bench/fio-transports.sh" -t "$runtime" -s 128m \
	-c native,copy,pt,zc
