#!/bin/bash
#
# self-check.sh - check that run-guest.sh gives a usable Linux 7.3 guest
#
# Usage: tests/vm/self-check.sh [run-guest.sh options]
#
# Boots the guest once and checks what the uringfs tests rely on: the
# kernel release, FUSE over io_uring switched on, /dev/fuse and fusectl, the
# host's fusermount3 seen through the root, module autoload (loop), UFS_*
# variables passed through, a share written from the guest, the command's
# output arriving intact and its exit status coming back.
#
# Exit status: 0 all passed, 1 some failed, 77 the guest cannot run here.

set -euo pipefail

readonly GUEST_EXIT=3
readonly OUTPUT_LINES=100000
# Quoting must survive the trip into the guest.
readonly UFS_VALUE="a b;\$c'*"

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
readonly script_dir
share=
failures=0

remove_share() {
	[[ -z "$share" ]] || rm -rf "$share"
}

# Runs in the guest: records facts in the share for the host to judge,
# prints a known sequence and exits with a known status.
guest_script() {
	cat <<-'EOF'
		results=$1/results
		{
			echo "release=$(uname -r)"
			echo "enable_uring=$(cat /sys/module/fuse/parameters/enable_uring)"
			[[ -c /dev/fuse ]] && echo "dev_fuse=yes"
			mountpoint -q /sys/fs/fuse/connections && echo "fusectl=yes"
			fusermount3 --version > /dev/null 2>&1 && echo "fusermount3=yes"
			truncate -s 16M /tmp/loop.img
			losetup --find --show /tmp/loop.img > /dev/null && echo "loop=yes"
			echo "ufs_var=${UFS_SELF_CHECK:-}"
			echo "home=$HOME"
		} > "$results"
		seq 1 "$2"
		exit "$3"
	EOF
}

expect() {
	local what=$1 actual=$2 wanted=$3

	if [[ "$actual" == "$wanted" ]]; then
		echo "ok   $what"
	else
		echo "FAIL $what: got '$actual', want '$wanted'"
		failures=$((failures + 1))
	fi
}

result() {
	sed -n "s/^$1=//p" "$share/results" 2> /dev/null
}

main() {
	local status=0 output

	trap remove_share EXIT
	share=$(mktemp -d "${TMPDIR:-/tmp}/uringfs-selfcheck.XXXXXX")
	output=$share/output

	UFS_SELF_CHECK=$UFS_VALUE "$script_dir/run-guest.sh" "$@" --share "$share" -- \
		bash -c "$(guest_script)" guest "$share" "$OUTPUT_LINES" "$GUEST_EXIT" \
		> "$output" || status=$?
	if [[ $status -eq 77 ]]; then
		exit 77
	fi

	expect "exit status" "$status" "$GUEST_EXIT"
	expect "output intact" "$(md5sum < "$output")" "$(seq 1 "$OUTPUT_LINES" | md5sum)"
	expect "share written" "$(test -s "$share/results" && echo yes)" yes
	expect "kernel series" "$(result release | cut -d. -f1,2 | cut -d- -f1)" 7.3
	expect "fuse.enable_uring" "$(result enable_uring)" Y
	expect "/dev/fuse" "$(result dev_fuse)" yes
	expect "fusectl" "$(result fusectl)" yes
	expect "fusermount3" "$(result fusermount3)" yes
	expect "loop autoload" "$(result loop)" yes
	expect "UFS_* passed" "$(result ufs_var)" "$UFS_VALUE"
	expect "HOME" "$(result home)" /root
	[[ $failures -eq 0 ]]
}

main "$@"
