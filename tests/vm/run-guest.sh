#!/bin/bash
#
# run-guest.sh - run a command as root in a throw-away Linux 7.3 guest
#
# Usage: tests/vm/run-guest.sh [--cwd DIR] [--share DIR]... [--timeout SECS]
#                              [--kernel VMLINUZ] [--modules DIR] [--systemd]
#                              -- COMMAND [ARGS...]
#
# Boots the kernel under qemu with the host's / as a read-only root (writes
# land in a tmpfs overlay and vanish), each --share DIR mounted read-write at
# the same path, runs COMMAND as root in DIR (--cwd; default: the current
# directory, or / if the guest cannot see it, e.g. under its fresh /tmp) and
# streams its stdout and stderr to ours. The exit status is the command's.
#
# Without --kernel and --modules, boots the Debian kernel that
# fetch-kernel.sh put in $UFS_VM_CACHE (default /var/cache/uringfs-vm).
# --kernel alone boots a kernel with everything built in; --modules alone
# takes DIR/vmlinuz as the kernel.
#
# The command sees PATH, HOME and friends set as for a root login, every
# UFS_* variable of the caller, and UFS_VM_GUEST=1.
#
# --systemd boots the host's systemd as PID 1 on that root, which runs the
# command as a service (uringfs-vm-cmd.service) and powers off after it.
#
# Exit status:
#   the command's        it ran to the end
#   77                   no qemu, busybox or kernel: the test cannot run here
#   124                  the guest ran out of time (--timeout, default 600 s)
#   125                  the guest failed to run the command, or died under it
#
# Environment: UFS_VM_CACHE, UFS_VM_TIMEOUT, UFS_VM_BOOT_TIMEOUT (seconds to
# reach the command, default 120), UFS_VM_ACCEL (auto, kvm or tcg),
# UFS_VM_APPEND (more kernel parameters; later ones win), UFS_VM_KEEP (keep
# the run directory with the console log even on success).

set -euo pipefail

readonly DEFAULT_KERNEL_RELEASE=7.3-amd64
readonly OUTPUT_PORT_NAME=uringfs.out
readonly GUEST_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
readonly EXIT_SKIP=77
readonly EXIT_TIMEOUT=124
readonly EXIT_HARNESS=125
readonly CONSOLE_TAIL_LINES=40

# quiet/loglevel keep the console log short; panic=-1 with -no-reboot turns
# a panic into a qemu exit, and oops=panic makes an oops one too, so a
# crashed guest is reported at once instead of at the timeout.
#
# clocksource=hpet: under multi-threaded TCG, the switch to the tsc
# clocksource a few seconds after boot patches a jump label while the other
# vCPU may run the site, which once gave an "Oops: int3" (about 1 boot in
# 35). With the hpet clocksource the switch never happens.
readonly KERNEL_CMDLINE="console=ttyS0 quiet loglevel=4 panic=-1 oops=panic rdinit=/init fuse.enable_uring=1 clocksource=hpet"

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
readonly script_dir

cwd=
init=busybox
shares=()
timeout_secs=${UFS_VM_TIMEOUT:-600}
boot_timeout_secs=${UFS_VM_BOOT_TIMEOUT:-120}
kernel=
modules=
command=()
accel=()
qemu_argv=()

run_dir=
qemu_pid=
cat_pid=
keep_run_dir=${UFS_VM_KEEP:-}

say() {
	echo "run-guest: $*" >&2
}

die() {
	say "$*"
	exit "$EXIT_HARNESS"
}

skip() {
	say "SKIP: $*"
	exit "$EXIT_SKIP"
}

usage() {
	sed -n '/^# Usage:/,/-- COMMAND/s/^# //p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

need_value() {
	[[ $# -ge 2 ]] || usage
}

absolute_dir() {
	[[ -d "$1" ]] || die "$1: not a directory"
	(cd "$1" && pwd -P)
}

parse_args() {
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--cwd) need_value "$@"; cwd=$2 ;;
		--share) need_value "$@"; shares+=("$2") ;;
		--timeout) need_value "$@"; timeout_secs=$2 ;;
		--kernel) need_value "$@"; kernel=$2 ;;
		--modules) need_value "$@"; modules=$2 ;;
		--systemd) init=systemd; shift; continue ;;
		--) shift; break ;;
		*) usage ;;
		esac
		shift 2
	done
	[[ $# -gt 0 ]] || usage
	command=("$@")
	[[ "$timeout_secs" =~ ^[1-9][0-9]*$ ]] || die "--timeout wants seconds, not '$timeout_secs'"
}

# The Debian kernel from fetch-kernel.sh unless told otherwise; kept out of
# the boot logic so that a kernel of our own boots the same way.
choose_kernel() {
	local cache=${UFS_VM_CACHE:-/var/cache/uringfs-vm}

	if [[ -z "$kernel" && -z "$modules" ]]; then
		modules="$cache/kernel/usr/lib/modules/$DEFAULT_KERNEL_RELEASE"
		[[ -f "$modules/vmlinuz" ]] ||
			skip "no $DEFAULT_KERNEL_RELEASE kernel in $cache (run tests/vm/fetch-kernel.sh)"
	fi
	if [[ -z "$kernel" ]]; then
		kernel="$modules/vmlinuz"
	fi
	[[ -r "$kernel" ]] || skip "kernel $kernel not readable"
	if [[ -n "$modules" ]]; then
		modules=$(absolute_dir "$modules")
	fi
}

check_host_tools() {
	command -v qemu-system-x86_64 > /dev/null ||
		skip "qemu-system-x86_64 not installed (qemu-system-x86)"
	command -v busybox > /dev/null || skip "busybox not installed (busybox-static)"
	if [[ $init == systemd && ! -x /lib/systemd/systemd ]]; then
		skip "--systemd: no /lib/systemd/systemd on this host (package systemd)"
	fi
	command -v cpio > /dev/null || skip "cpio not installed"
}

# Sorted so that a share inside another is mounted after it, not hidden.
canonicalize_paths() {
	local i

	[[ -z "$cwd" ]] || cwd=$(absolute_dir "$cwd")
	for i in "${!shares[@]}"; do
		shares[i]=$(absolute_dir "${shares[i]}")
		[[ "${shares[i]}" != / ]] || die "cannot share / read-write"
		[[ "${shares[i]}" != *$'\n'* ]] || die "share path with a newline"
	done
	if [[ ${#shares[@]} -gt 0 ]]; then
		mapfile -t shares < <(printf '%s\n' "${shares[@]}" | sort -u)
	fi
}

# /dev/kvm may be a PVM layer nested in a cloud VM, which cannot boot a
# stock kernel and leaves qemu paused forever on a KVM internal error. Only a
# real kvm_intel/kvm_amd is trusted; everything else gets TCG.
kvm_is_usable() {
	[[ -r /dev/kvm && -w /dev/kvm ]] &&
		[[ ! -e /sys/module/kvm_pvm ]] &&
		[[ -e /sys/module/kvm_intel || -e /sys/module/kvm_amd ]]
}

choose_accel() {
	local choice=${UFS_VM_ACCEL:-auto}

	if [[ "$choice" == auto ]]; then
		if kvm_is_usable; then choice=kvm; else choice=tcg; fi
	fi
	case "$choice" in
	kvm) accel=(-accel kvm -cpu host) ;;
	tcg) accel=(-accel "tcg,thread=multi,tb-size=512" -cpu max) ;;
	*) die "UFS_VM_ACCEL must be auto, kvm or tcg" ;;
	esac
}

# qemu splits option values at commas; a literal comma is written twice.
qemu_escape() {
	echo "${1//,/,,}"
}

# security_model=passthrough stores the guest's owners as the real ones,
# which needs root; an ordinary user's qemu cannot chown, so it gets none.
virtfs_arg() {
	local path=$1 tag=$2 extra=${3:-} model=none

	[[ $EUID -ne 0 ]] || model=passthrough
	echo "local,path=$(qemu_escape "$path"),mount_tag=$tag,security_model=$model,multidevs=remap$extra"
}

build_qemu_argv() {
	local console_log=$1 output=$2 i

	qemu_argv=(
		-M q35 -nodefaults -no-user-config -display none -no-reboot
		-smp 2 -m 2G "${accel[@]}"
		-kernel "$kernel" -initrd "$run_dir/initramfs.cpio"
		-append "$KERNEL_CMDLINE${UFS_VM_APPEND:+ $UFS_VM_APPEND}"
		-chardev "file,id=console,path=$(qemu_escape "$console_log")"
		-serial chardev:console
		-device virtio-serial-pci
		-chardev "file,id=output,path=$(qemu_escape "$output")"
		-device "virtserialport,chardev=output,name=$OUTPUT_PORT_NAME"
		-virtfs "$(virtfs_arg / uringfs-root ,readonly=on)"
		-virtfs "$(virtfs_arg "$run_dir/ctl" uringfs-ctl)"
	)
	for i in "${!shares[@]}"; do
		qemu_argv+=(-virtfs "$(virtfs_arg "${shares[i]}" "uringfs-share$i")")
	done
}

# The guest runs cmd.sh with an empty environment, so it sets everything the
# command should see: a root login's basics and the caller's UFS_* names.
write_command_script() {
	local name

	{
		echo "# Written by run-guest.sh, run by guest-init.sh under env -i."
		printf 'export PATH=%q HOME=/root USER=root LOGNAME=root SHELL=/bin/bash\n' \
			"$GUEST_PATH"
		echo 'export TERM=dumb LANG=C.UTF-8'
		while IFS= read -r name; do
			[[ "$name" == UFS_* ]] || continue
			printf 'export %s=%q\n' "$name" "${!name}"
		done < <(compgen -e)
		echo 'export UFS_VM_GUEST=1'
		if [[ -n "$cwd" ]]; then
			printf 'cd -- %q || exit %d\n' "$cwd" "$EXIT_HARNESS"
		else
			printf 'cd -- %q 2> /dev/null || cd /\n' "$(pwd -P)"
		fi
		printf 'exec'
		printf ' %q' "${command[@]}"
		echo
	} > "$run_dir/ctl/cmd.sh"
}

write_control_dir() {
	mkdir "$run_dir/ctl"
	echo "$modules" > "$run_dir/ctl/modules"
	echo "$init" > "$run_dir/ctl/init"
	if [[ ${#shares[@]} -gt 0 ]]; then
		printf '%s\n' "${shares[@]}" > "$run_dir/ctl/shares"
	else
		: > "$run_dir/ctl/shares"
	fi
	write_command_script
}

build_initramfs() {
	local args=()

	[[ -z "$modules" ]] || args=(--modules "$modules")
	"$script_dir/mkinitramfs.sh" "${args[@]}" "$run_dir/initramfs.cpio" ||
		die "cannot build the initramfs"
}

# Waits until the guest has started the command. Gives up on a guest that
# has not got there in time, since a hung boot would otherwise cost the whole
# --timeout. Returns 1 if the boot was cut short.
watch_boot() {
	local ctl=$1 deadline=$((SECONDS + boot_timeout_secs))

	while kill -0 "$qemu_pid" 2> /dev/null; do
		[[ ! -e "$ctl/started" ]] || return 0
		if ((SECONDS >= deadline)); then
			say "guest did not start the command within ${boot_timeout_secs}s"
			kill -TERM "$qemu_pid" 2> /dev/null || true
			return 1
		fi
		sleep 0.1
	done
}

# One boot. The command's output arrives on a virtio-serial port backed by a
# FIFO that cat copies to our stdout. We hold the FIFO open read-write for
# the duration, so neither cat's nor qemu's open blocks on the other and cat
# sees end-of-file only once qemu is gone and we let go. (-chardev stdio
# would make qemu read stdin, and its EOF stalls the guest's writes.)
boot_guest() {
	local attempt=$1 ctl=$run_dir/ctl fifo=$run_dir/output.fifo
	local console_log=$run_dir/console-$attempt.log hold status=0

	rm -f "$ctl/started" "$ctl/status"
	[[ -p "$fifo" ]] || mkfifo "$fifo"
	build_qemu_argv "$console_log" "$fifo"

	exec {hold}<> "$fifo"
	cat < "$fifo" {hold}>&- &
	cat_pid=$!
	timeout --kill-after=10 "$timeout_secs" qemu-system-x86_64 "${qemu_argv[@]}" \
		< /dev/null > "$run_dir/qemu-$attempt.log" 2>&1 {hold}>&- &
	qemu_pid=$!

	watch_boot "$ctl" || true
	wait "$qemu_pid" || status=$?
	qemu_pid=
	exec {hold}>&-
	wait "$cat_pid" || true
	cat_pid=
	return "$status"
}

show_failure() {
	local attempt=$1
	local qemu_log=$run_dir/qemu-$attempt.log console_log=$run_dir/console-$attempt.log

	keep_run_dir=1
	if [[ -s "$qemu_log" ]]; then
		say "qemu said:"
		sed 's/^/  /' "$qemu_log" >&2
	fi
	say "last $CONSOLE_TAIL_LINES lines of the console log $console_log:"
	tail -n "$CONSOLE_TAIL_LINES" "$console_log" 2> /dev/null | sed 's/^/  /' >&2 || true
	say "console log: $console_log"
}

run_guest() {
	local attempt qemu_status status

	for attempt in 1 2; do
		qemu_status=0
		boot_guest "$attempt" || qemu_status=$?
		if [[ -f "$run_dir/ctl/status" ]]; then
			read -r status < "$run_dir/ctl/status" || true
			[[ "$status" =~ ^[0-9]+$ ]] ||
				die "garbled exit status '$status' from the guest"
			return "$status"
		fi
		# guest-init.sh stopped on a setup error: booting again would
		# fail the same way.
		if grep -q '^guest-init: ' "$run_dir/console-$attempt.log" 2> /dev/null; then
			say "guest setup failed"
			show_failure "$attempt"
			return "$EXIT_HARNESS"
		fi
		if [[ ! -e "$run_dir/ctl/started" && $attempt -eq 1 ]]; then
			say "guest died before the command started" \
				"(console log: $run_dir/console-1.log); retrying once"
			keep_run_dir=1
			continue
		fi
		if [[ ! -e "$run_dir/ctl/started" ]]; then
			say "guest died before the command started, twice"
		elif [[ $qemu_status -eq $EXIT_TIMEOUT ]]; then
			say "timed out after ${timeout_secs}s"
			show_failure "$attempt"
			return "$EXIT_TIMEOUT"
		else
			say "guest died while running the command"
		fi
		show_failure "$attempt"
		return "$EXIT_HARNESS"
	done
}

# Called through the EXIT trap, which shellcheck does not follow.
# shellcheck disable=SC2317
cleanup() {
	[[ -z "$qemu_pid" ]] || kill -TERM "$qemu_pid" 2> /dev/null || true
	[[ -z "$cat_pid" ]] || kill -TERM "$cat_pid" 2> /dev/null || true
	[[ -n "$run_dir" ]] || return 0
	if [[ -n "$keep_run_dir" ]]; then
		rm -f "$run_dir/initramfs.cpio" "$run_dir/output.fifo"
	else
		rm -rf "$run_dir"
	fi
}

main() {
	local status=0

	parse_args "$@"
	check_host_tools
	choose_kernel
	choose_accel
	canonicalize_paths

	trap cleanup EXIT
	trap 'exit 130' INT TERM
	run_dir=$(mktemp -d "${TMPDIR:-/tmp}/uringfs-vm.XXXXXX")
	write_control_dir
	build_initramfs
	run_guest || status=$?
	exit "$status"
}

main "$@"
