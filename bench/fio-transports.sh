#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Throughput of uringfs's transports against the backing file system, in one
# run: fio with 4 jobs at iodepth 16, direct random reads and writes of 1 MiB
# and 128 KiB on a tmpfs backing directory.  Prints MiB/s and the ratio to
# native tmpfs.  Root only (tmpfs, enable_uring).  Not a test: numbers only.
#
#   bench/fio-transports.sh [-t SECONDS] [-s SIZE_PER_JOB] [-c CONFIGS]
#
# CONFIGS is a comma list of native, dev (/dev/fuse), uring (io_uring with
# the default zero_copy=auto), copy (io_uring, zero_copy=off) and zc
# (io_uring, zero_copy=on, Linux 7.3); default native,dev,uring.  Extra
# daemon options (workers=4, backing_direct_io=on) go in UFS_BENCH_OPTS.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
daemon=${UFS_DAEMON:-$top/daemon/uringfs}
runtime=10
size=256m
configs=native,dev,uring

while getopts "t:s:c:" opt; do
	case $opt in
	t) runtime=$OPTARG ;;
	s) size=$OPTARG ;;
	c) configs=$OPTARG ;;
	*) exit 2 ;;
	esac
done

work=$(mktemp -d /tmp/ufs-bench.XXXXXX)
mnt=$work/mnt
declare -A mibs
declare -A zc_opts=([uring]="" [copy]=",zero_copy=off" [zc]=",zero_copy=on")

cleanup() {
	if mountpoint -q "$mnt"; then
		fusermount3 -u "$mnt" || umount -l "$mnt"
	fi
	if mountpoint -q "$work/tmpfs"; then
		umount "$work/tmpfs"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# MiB/s of one fio job group in dir.
run_fio() {
	local dir=$1 rw=$2 bs=$3
	fio --name=bench --directory="$dir" --rw="$rw" --bs="$bs" --size="$size" \
		--numjobs=4 --iodepth=16 --ioengine=libaio --direct=1 --group_reporting \
		--time_based --runtime="$runtime" --ramp_time=1 --output-format=json |
		python3 -c 'import json,sys
j = json.load(sys.stdin)["jobs"][0]
print("%.0f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024))'
}

# Lay the files out once per directory so reads have data to read.
layout() {
	fio --name=bench --directory="$1" --rw=write --bs=1m --size="$size" --numjobs=4 \
		--ioengine=psync --output=/dev/null
}

start_daemon() {
	mkdir -p "$work/tmpfs/$1" "$mnt"
	"$daemon" -o "$2${UFS_BENCH_OPTS:+,$UFS_BENCH_OPTS}" "$work/tmpfs/$1" "$mnt"
	grep -E '^(transport|queue_mode|workers|zero_copy) ' "$mnt/.uringfs" | tr '\n' ' ' >&2
	echo >&2
}

stop_daemon() {
	fusermount3 -u "$mnt"
	sleep 0.5
}

tests=("randread 1m" "randwrite 1m" "randread 128k" "randwrite 128k")

measure() {
	local config=$1 dir=$2 t
	layout "$dir"
	for t in "${tests[@]}"; do
		read -r rw bs <<<"$t"
		mibs[$config,$rw,$bs]=$(run_fio "$dir" "$rw" "$bs")
		echo "$config $rw $bs: ${mibs[$config,$rw,$bs]} MiB/s" >&2
	done
}

mkdir -p "$work/tmpfs"
mount -t tmpfs -o size=8g tmpfs "$work/tmpfs"
uname -r >&2
IFS=, read -ra wanted <<<"$configs"
for config in "${wanted[@]}"; do
	case $config in
	native)
		mkdir -p "$work/tmpfs/native"
		measure native "$work/tmpfs/native"
		;;
	dev)
		start_daemon dev io_uring=off
		measure dev "$mnt"
		stop_daemon
		;;
	uring | copy | zc)
		echo Y >/sys/module/fuse/parameters/enable_uring
		start_daemon "$config" "io_uring=on${zc_opts[$config]}"
		measure "$config" "$mnt"
		stop_daemon
		;;
	*)
		echo "unknown config $config" >&2
		exit 2
		;;
	esac
done

ratio() {
	python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.2fx' % (a / b) if b else '-')" "$1" "$2"
}

printf '\n| test | %s |\n' "$(printf '%s MiB/s | ' "${wanted[@]}" | sed 's/ | $//')"
printf '|---|%s\n' "$(printf -- '---|%.0s' "${wanted[@]}")"
for t in "${tests[@]}"; do
	read -r rw bs <<<"$t"
	row="| $rw $bs |"
	for config in "${wanted[@]}"; do
		value=${mibs[$config,$rw,$bs]}
		if [[ $config != native && -n ${mibs[native,$rw,$bs]:-} ]]; then
			value="$value ($(ratio "$value" "${mibs[native,$rw,$bs]}"))"
		fi
		row="$row $value |"
	done
	echo "$row"
done
if [[ -n ${mibs[dev,randread,1m]:-} && -n ${mibs[uring,randread,1m]:-} ]]; then
	echo
	echo "uring / dev, 1 MiB random reads: $(ratio "${mibs[uring,randread,1m]}" "${mibs[dev,randread,1m]}")"
fi
if [[ -n ${mibs[copy,randread,1m]:-} && -n ${mibs[zc,randread,1m]:-} ]]; then
	echo
	for t in "randread 1m" "randwrite 1m" "randread 128k" "randwrite 128k"; do
		read -r rw bs <<<"$t"
		echo "zero copy / copy, $rw $bs: $(ratio "${mibs[zc,$rw,$bs]}" "${mibs[copy,$rw,$bs]}")"
	done
fi
