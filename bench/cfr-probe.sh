#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The copy_file_range probe benchmark (after the RFC's model): 30 queued
# 16 MiB copies plus a probe doing small stats and reads, native and through
# uringfs in each copy_file_range mode the kernel offers.  Prints a table of
# the probe's waits.  Root only.  Not a test: numbers only.
#
#   bench/cfr-probe.sh [COPIES] [PROBES]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
daemon=${UFS_DAEMON:-$top/daemon/uringfs}
copies=${1:-30}
probes=${2:-2000}
probe=$top/bench/cfr-probe

work=$(mktemp -d /tmp/ufs-cfr.XXXXXX)
mnt=$work/mnt
cleanup() {
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	if mountpoint -q "$work/fs"; then
		umount "$work/fs"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -Wall -Wextra -o "$probe" "$top/bench/cfr-probe.c" -lpthread
mkdir -p "$work/fs" "$mnt"
mount -t tmpfs -o size=4g tmpfs "$work/fs"
if [[ -w /sys/module/fuse/parameters/enable_uring ]]; then
	echo Y >/sys/module/fuse/parameters/enable_uring
fi

row() {
	local name=$1 line=$2
	# probes=N p50_us=A p90_us=B p99_us=C max_us=D copies_ms=E
	echo "$line" | sed -E "s/probes=([0-9]+) p50_us=([0-9]+) p90_us=([0-9]+) p99_us=([0-9]+) max_us=([0-9]+) copies_ms=([0-9]+)/| $name | \2 | \3 | \4 | \5 | \6 | \1 |/"
}

echo "| mode | p50 µs | p90 µs | p99 µs | max µs | copies ms | probes |"
echo "|---|---|---|---|---|---|---|"
mkdir -p "$work/fs/native"
row "native, no copies" "$("$probe" "$work/fs/native" 0 "$probes")"
row native "$("$probe" "$work/fs/native" "$copies" "$probes")"
for mode in sync thread ring; do
	mkdir -p "$work/fs/$mode"
	if ! "$daemon" -o "io_uring=auto,copy_file_range=$mode,attr_timeout=0,entry_timeout=0" \
		"$work/fs/$mode" "$mnt" 2>/dev/null; then
		echo "| $mode | (not available on this kernel) |||||"
		continue
	fi
	transport=$(awk '$1 == "transport" {print $2}' "$mnt/.uringfs")
	if [[ $mode == sync ]]; then
		# The probe's own round trips, with no copy at all: the floor.
		row "no copies ($transport)" "$("$probe" "$mnt" 0 "$probes")"
	fi
	row "$mode ($transport)" "$("$probe" "$mnt" "$copies" "$probes")"
	fusermount3 -u "$mnt"
	sleep 0.3
done
