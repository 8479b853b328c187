# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
#
# Helpers the shell benches share: sourced by fio-transports.sh and
# real-programs.sh, not run by itself.  Root only (mounts).

# The median of the numbers after FORMAT, printed with FORMAT (e.g. %.0f).
bench_median() {
	local fmt=$1
	shift
	python3 -c 'import statistics, sys
print(sys.argv[1] % statistics.median(map(float, sys.argv[2:])))' "$fmt" "$@"
}

# A over B as "1.23x", or "-" when B is zero.
bench_ratio() {
	python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print('%.2fx' % (a / b) if b else '-')" "$1" "$2"
}

# Mount a tmpfs of SIZE at DIR (made if missing).
bench_tmpfs() {
	mkdir -p "$2"
	mount -t tmpfs -o "size=$1" tmpfs "$2"
}

# Mount SOURCE at MNT with uringfs DAEMON and the -o options OPTS (plus
# UFS_BENCH_OPTS), and say on stderr which transport and paths it took.
# The daemon forks once the mount is up, so the mount is ready on return.
bench_ufs_mount() {
	local daemon=$1 opts=$2 src=$3 mnt=$4
	mkdir -p "$src" "$mnt"
	"$daemon" -o "$opts${UFS_BENCH_OPTS:+,$UFS_BENCH_OPTS}" "$src" "$mnt"
	grep -E '^(transport|queue_mode|workers|zero_copy|passthrough) ' "$mnt/.uringfs" |
		tr '\n' ' ' >&2
	echo >&2
}

# Unmount the FUSE mount MNT if it is one (lazily if it is busy), and give
# the daemon a moment to exit.
bench_umount() {
	mountpoint -q "$1" || return 0
	fusermount3 -u "$1" || umount -l "$1"
	sleep 0.5
}

# The mount's device as the kernel's dev_t (MAJOR << 20 | MINOR): what the
# fuse tracepoints call "connection".
bench_kdev() {
	local majmin
	majmin=$(mountpoint -d "$1")
	echo $((${majmin%%:*} << 20 | ${majmin##*:}))
}
