#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The copy_file_range probe benchmarks.  Root only.  Not a test: numbers.
#
# 1. The seed's model (cfr-seed.c): COPIES processes each copying a 16 MiB
#    file with single copy_file_range calls, one after another, while a
#    probe times statx(AT_STATX_FORCE_SYNC) of another file, one GETATTR
#    round trip, for SECONDS.  Rows: native (the tmpfs itself), uringfs
#    over /dev/fuse and over io_uring with default settings, and each
#    copy_file_range mode the kernel offers, for 0 (the floor) and each
#    count in UFS_BENCH_COPIES (default "30 60 120").
# 2. The RFC's variant (cfr-probe.c): 30 threads copy 16 MiB each (looping
#    until done) while a probe stats, opens, reads and closes a small file.
#
#   bench/cfr-probe.sh [seed|rfc|all] [SECONDS]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
daemon=${UFS_DAEMON:-$top/daemon/uringfs}
which=${1:-all}
seconds=${2:-3}
copies=30
probes=2000
counts=${UFS_BENCH_COPIES:-30 60 120}
probe=$top/bench/cfr-probe
seed=$top/bench/cfr-seed

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
cc -O2 -Wall -Wextra -pthread -o "$seed" "$top/bench/cfr-seed.c"
mkdir -p "$work/fs" "$mnt"
mount -t tmpfs -o size=4g tmpfs "$work/fs"
if [[ -w /sys/module/fuse/parameters/enable_uring ]]; then
	echo Y >/sys/module/fuse/parameters/enable_uring
fi

# mount_as NAME OPTIONS: uringfs at $mnt over $work/fs/NAME; fails if the setting is refused.
mount_as() {
	mkdir -p "$work/fs/$1"
	if [[ -n $2 ]]; then
		"$daemon" -o "$2" "$work/fs/$1" "$mnt" 2>/dev/null
	else
		"$daemon" "$work/fs/$1" "$mnt" 2>/dev/null
	fi
}

unmount() {
	fusermount3 -u "$mnt"
	sleep 0.3
}

# seed_rows NAME DIR: one row per copy count.
seed_rows() {
	local name=$1 dir=$2 n line
	for n in 0 $counts; do
		line=$("$seed" "$dir" "$n" "$seconds")
		# probes=N p50_us=A p90_us=B p99_us=C max_us=D start_ms=S started=T calls=E short=F failed=G bad=H wake_...
		echo "$line" | sed -E "s/probes=([0-9]+) p50_us=([0-9]+) p90_us=([0-9]+) p99_us=([0-9]+) max_us=([0-9]+) start_ms=[0-9]+ started=[0-9]+ calls=([0-9]+) short=([0-9]+) failed=([0-9]+) bad=([0-9]+).*/| $name | $n | \2 | \3 | \4 | \5 | \1 | \6 | \7 | \8 | \9 |/"
	done
}

seed_table() {
	local name opts transport mode
	echo "Seed model: single-call 16 MiB copies, probe = one statx(AT_STATX_FORCE_SYNC), ${seconds} s each"
	echo
	echo "| setup | copies | p50 µs | p90 µs | p99 µs | worst µs | probes | copy calls | short | failed | wrong bytes |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	mkdir -p "$work/fs/native"
	seed_rows native "$work/fs/native"
	for name in dev uring dev-thread dev-sync uring-thread uring-sync uring-ring; do
		case $name in
		dev) opts=io_uring=off ;;
		uring) opts= ;;
		dev-*) opts="io_uring=off,copy_file_range=${name#dev-}" ;;
		uring-*) opts="io_uring=on,copy_file_range=${name#uring-}" ;;
		esac
		if ! mount_as "$name" "$opts"; then
			echo "| $name (${opts:-defaults}) | (refused on this kernel) ||||||||||"
			continue
		fi
		transport=$(awk '$1 == "transport" {print $2}' "$mnt/.uringfs")
		mode=$(awk '$1 == "cfr_mode" {print $2}' "$mnt/.uringfs")
		seed_rows "${opts:-defaults}: $transport, $mode" "$mnt"
		unmount
	done
	echo
}

row() {
	local name=$1 line=$2
	# probes=N p50_us=A p90_us=B p99_us=C max_us=D copies_ms=E
	echo "$line" | sed -E "s/probes=([0-9]+) p50_us=([0-9]+) p90_us=([0-9]+) p99_us=([0-9]+) max_us=([0-9]+) copies_ms=([0-9]+)/| $name | \2 | \3 | \4 | \5 | \6 | \1 |/"
}

rfc_table() {
	echo "RFC variant: $copies threads, 16 MiB each, looping; probe = stat, open, read 512 bytes, close"
	echo
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
	echo
}

echo "Host: $(uname -r), $(nproc) CPUs; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
case $which in
seed) seed_table ;;
rfc) rfc_table ;;
all)
	seed_table
	rfc_table
	;;
*)
	echo "usage: bench/cfr-probe.sh [seed|rfc|all] [SECONDS]" >&2
	exit 2
	;;
esac
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
