#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Throughput of uringfs's transports against the backing file system, in one
# run: fio with 4 jobs at iodepth 16, direct random reads and writes of 1 MiB
# and 128 KiB on a tmpfs backing directory.  Prints MiB/s and the ratio to
# native tmpfs.  Root only (tmpfs, enable_uring).  Not a test: numbers only.
#
#   bench/fio-transports.sh [-t SECONDS] [-s SIZE_PER_JOB] [-c CONFIGS] [-r ROUNDS]
#
# CONFIGS is a comma list of
#   native  the tmpfs itself
#   dev     /dev/fuse, the daemon copying (io_uring=off,io_path=copy)
#   copy    io_uring, the daemon copying (io_path=copy)
#   pt      io_uring, kernel passthrough (io_path=passthrough)
#   zc      io_uring, zero copy (io_path=zero_copy, Linux 7.3)
#   uring   io_uring with the default settings (io_path=auto)
#   base    the build in UFS_BASE_DAEMON with io_uring=on and its defaults:
#           the baseline, e.g. the main branch from before a change
#   alt     io_uring with UFS_BENCH_ALT_OPTS added, to set one setting beside
#           another in one run (e.g. io_path=copy,pin_queues=off beside copy)
# default native,dev,copy,pt,uring (and base when UFS_BASE_DAEMON is set).
# With -r, the configs run ROUNDS times in turn (native, dev, ..., native,
# dev, ...) and the table shows each cell's median, so a slow minute of the
# machine falls on every config alike.
# Extra daemon options (workers=4, backing_direct_io=on) go in UFS_BENCH_OPTS.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
daemon=${UFS_DAEMON:-$top/daemon/uringfs}
runtime=10
size=256m
rounds=1
configs=native,dev,copy,pt,uring${UFS_BASE_DAEMON:+,base}

while getopts "t:s:c:r:" opt; do
	case $opt in
	t) runtime=$OPTARG ;;
	s) size=$OPTARG ;;
	c) configs=$OPTARG ;;
	r) rounds=$OPTARG ;;
	*) exit 2 ;;
	esac
done

work=$(mktemp -d /tmp/ufs-bench.XXXXXX)
mnt=$work/mnt
declare -A mibs
declare -A path_opts=([uring]="" [copy]=",io_path=copy" [pt]=",io_path=passthrough"
	[zc]=",io_path=zero_copy")

cleanup() {
	bench_umount "$mnt"
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
	bench_ufs_mount "${3:-$daemon}" "$2" "$work/tmpfs/$1" "$mnt"
}

stop_daemon() {
	bench_umount "$mnt"
}

tests=("randread 1m" "randwrite 1m" "randread 128k" "randwrite 128k")

# Each round's MiB/s go in runs[config,rw,bs] as a space-separated list.
declare -A runs
measure() {
	local config=$1 dir=$2 t value
	layout "$dir"
	for t in "${tests[@]}"; do
		read -r rw bs <<<"$t"
		value=$(run_fio "$dir" "$rw" "$bs")
		runs[$config,$rw,$bs]="${runs[$config,$rw,$bs]:-} $value"
		echo "$config $rw $bs: $value MiB/s" >&2
	done
}

bench_tmpfs 8g "$work/tmpfs"
uname -r >&2
IFS=, read -ra wanted <<<"$configs"
for ((round = 1; round <= rounds; round++)); do
	((rounds == 1)) || echo "round $round of $rounds" >&2
	for config in "${wanted[@]}"; do
		case $config in
		native)
			mkdir -p "$work/tmpfs/native"
			measure native "$work/tmpfs/native"
			;;
		dev)
			start_daemon dev io_uring=off,io_path=copy
			measure dev "$mnt"
			stop_daemon
			;;
		uring | copy | pt | zc)
			echo Y >/sys/module/fuse/parameters/enable_uring
			start_daemon "$config" "io_uring=on${path_opts[$config]}"
			measure "$config" "$mnt"
			stop_daemon
			;;
		alt)
			echo Y >/sys/module/fuse/parameters/enable_uring
			start_daemon alt "io_uring=on,${UFS_BENCH_ALT_OPTS:?alt needs UFS_BENCH_ALT_OPTS}"
			measure alt "$mnt"
			stop_daemon
			;;
		base)
			echo Y >/sys/module/fuse/parameters/enable_uring
			start_daemon base io_uring=on "${UFS_BASE_DAEMON:?base needs UFS_BASE_DAEMON}"
			measure base "$mnt"
			stop_daemon
			;;
		*)
			echo "unknown config $config" >&2
			exit 2
			;;
		esac
	done
done
for key in "${!runs[@]}"; do
	# shellcheck disable=SC2086 # the list splits on purpose
	mibs[$key]=$(bench_median %.0f ${runs[$key]})
done

((rounds == 1)) || printf '\nmedians of %d rounds, configs in turn\n' "$rounds"
printf '\n| test | %s |\n' "$(printf '%s MiB/s | ' "${wanted[@]}" | sed 's/ | $//')"
printf '|---|%s\n' "$(printf -- '---|%.0s' "${wanted[@]}")"
for t in "${tests[@]}"; do
	read -r rw bs <<<"$t"
	row="| $rw $bs |"
	for config in "${wanted[@]}"; do
		value=${mibs[$config,$rw,$bs]}
		if [[ $config != native && -n ${mibs[native,$rw,$bs]:-} ]]; then
			value="$value ($(bench_ratio "$value" "${mibs[native,$rw,$bs]}"))"
		fi
		row="$row $value |"
	done
	echo "$row"
done
# Pairs worth a ratio of their own, where both ran.
compare() {
	local a=$1 b=$2 what=$3 t
	[[ -n ${mibs[$a,randread,1m]:-} && -n ${mibs[$b,randread,1m]:-} ]] || return 0
	echo
	for t in "${tests[@]}"; do
		read -r rw bs <<<"$t"
		echo "$what, $rw $bs: $(bench_ratio "${mibs[$a,$rw,$bs]}" "${mibs[$b,$rw,$bs]}")"
	done
}
compare copy dev "io_uring copy / dev copy"
compare zc pt "zero copy / passthrough"
compare copy base "copy / baseline"
compare alt copy "alt (${UFS_BENCH_ALT_OPTS:-}) / copy"
