# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# ufs_status and ufs_cause are results for the sourcing script:
# shellcheck disable=SC2034
#
# Sourced by the scripts of the headline suites: the io_uring host variants
# (tests/mount/uring.sh, uring-small.sh, asan.sh), the Linux 7.3 guest
# (tests/vm/guest-73.sh), the 7.3 uapi check (tests/vm/abi-73.sh) and the
# copy-op guest (tests/kernel/cfr-guest.sh).
#
# These are the only places where FUSE over io_uring, buffer pools, zero
# copy and the ring copy op are tested. A skip of one of them is a claim
# that nothing we could change would let it run, and it must carry the
# cause as it was found (apt's error line, the missing binary by name),
# never a guess. On a developer's machine that is enough; under CI
# (CI=true) a headline suite that did not run means the features went
# untested, so there it is a failure.

ufs_status=0
ufs_cause=

# True under CI: CI=true (GitHub, GitLab and most others set it), or
# UFS_CI=true where CI itself does not reach (the guest gets UFS_* only).
ufs_under_ci() {
	case ${CI:-${UFS_CI:-}} in
	true | 1) return 0 ;;
	*) return 1 ;;
	esac
}

# ufs_cannot_run CAUSE...: end the script because the suite cannot run.
# Outside CI: TAP "1..0 # SKIP CAUSE". Under CI: "Bail out!", which
# automake's TAP driver reports as ERROR, and a non-zero exit.
ufs_cannot_run() {
	local cause

	cause=$(printf '%s' "$*" | tr '\n' ' ')
	if ufs_under_ci; then
		echo "Bail out! CI=true and this suite cannot run: $cause"
		exit 1
	fi
	echo "1..0 # SKIP $cause"
	exit 0
}

# ufs_need COMMAND...: a step the suite needs first (fetch-kernel.sh): its
# skip is the suite's, any other failure a "Bail out!".
ufs_need() {
	local what=${1##*/}

	ufs_run "$@" >&2 && return 0
	if ((ufs_status == 77)); then
		ufs_cannot_run "$what: $ufs_cause"
	fi
	echo "Bail out! $what failed with status $ufs_status: $ufs_cause"
	exit 1
}

# ufs_guest_ended: after ufs_run of run-guest.sh (or a wrapper): a guest
# that did not boot is the suite's skip, one that died a "Bail out!".
ufs_guest_ended() {
	case $ufs_status in
	0) ;;
	77) ufs_cannot_run "run-guest.sh: $ufs_cause" ;;
	*)
		echo "Bail out! the guest ended with status $ufs_status: $ufs_cause"
		exit 1
		;;
	esac
}

# ufs_run [--tee FILE] COMMAND...: run COMMAND with its stderr passed on as
# it comes and kept; set ufs_status to its exit status and ufs_cause to what
# it gave as the reason: its last "SKIP: " message (what tests/vm/*.sh and
# tests/kernel/build-kernel.sh print before exiting 77), else its last line
# on stderr. --tee FILE: a copy of its stdout goes to FILE too.
ufs_run() {
	local - err out=

	if [[ $1 == --tee ]]; then
		out=$2
		shift 2
	fi
	# Whatever the caller's options: the status is COMMAND's, not tee's.
	set +e -o pipefail
	err=$(mktemp)
	# stdout stays stdout; stderr goes through tee to the file and on to
	# stderr. A pipeline waits for its tee, so the files are complete after.
	if [[ -n $out ]]; then
		{ "$@" 2>&1 1>&3 3>&- | tee "$err" >&2 3>&-; } 3>&1 | tee "$out"
	else
		{ "$@" 2>&1 1>&3 3>&- | tee "$err" >&2 3>&-; } 3>&1
	fi
	ufs_status=$?
	ufs_cause=$(sed -n 's/^.*SKIP: //p' "$err" | tail -n 1)
	[[ -n $ufs_cause ]] || ufs_cause=$(tail -n 1 "$err")
	[[ -n $ufs_cause ]] || ufs_cause="$1 exited with status $ufs_status and no message"
	rm -f "$err"
	return "$ufs_status"
}

# ufs_uring_cause: print why FUSE over io_uring cannot be had on this host
# after trying to switch it on, or nothing when enable_uring is Y. Root can
# switch it; scripts/test-setup does, but a run started by hand need not
# have had that, and fallback.sh sets it to N while it runs (uring.sh and
# friends hold the lock that keeps it from doing so meanwhile).
ufs_uring_cause() {
	local param=/sys/module/fuse/parameters/enable_uring err

	if [[ ! -e $param ]]; then
		if [[ ! -d /sys/module/fuse ]]; then
			echo "the fuse module is not loaded (/sys/module/fuse missing: modprobe fuse)"
		else
			echo "this kernel ($(uname -r)) has no FUSE-over-io_uring ($param missing)"
		fi
		return
	fi
	[[ $(cat "$param") == Y ]] && return
	if ! err=$( (echo Y >"$param") 2>&1); then
		echo "enable_uring is $(cat "$param") and writing Y to $param failed: ${err##*: }"
		return
	fi
	[[ $(cat "$param") == Y ]] ||
		echo "enable_uring is still $(cat "$param") after writing Y to $param"
}
