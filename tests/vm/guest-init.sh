#!/bin/sh
# shellcheck shell=dash
#
# guest-init.sh - /init of the test guest's initramfs (see mkinitramfs.sh)
#
# This runs as PID 1 under busybox ash, not bash: nothing else exists before
# the real root is mounted (shellcheck checks it as dash, ash's closest kin). It builds the guest's root from the host's / (read
# only, over 9p) with a tmpfs overlay on top, mounts the shares and control
# directory that run-guest.sh set up, runs the command chrooted into that root
# with its output on a virtio-serial port, records the exit status in the
# control directory and powers off.
#
# Control directory (9p tag uringfs-ctl), written by run-guest.sh:
#   modules  host path of the module tree, or empty (kernel without modules)
#   shares   host paths shared read-write, one per line, tags uringfs-share<N>
#   cmd.sh   bash script that sets the environment, cwd and runs the command
# and by this script:
#   started  the command is about to run
#   status   its exit status
# Setup errors go to the console as "guest-init: ..." lines, which
# run-guest.sh looks for.

set -eu
# busybox ash has pipefail even though POSIX sh does not.
# shellcheck disable=SC3040
set -o pipefail

export PATH=/bin

readonly NEWROOT=/newroot
readonly CTL=/ctl
readonly GUEST_CTL=/run/uringfs-vm
readonly OUTPUT_PORT_NAME=uringfs.out
readonly P9_OPTS=trans=virtio,version=9p2000.L,msize=512000

# Where the control directory is mounted at the moment.
ctl=$CTL

# A setup error is not worth a second boot; the console line tells
# run-guest.sh so.
die() {
	echo "guest-init: $*" >&2
	poweroff -n -f
	exit 1
}

mount_kernel_filesystems() {
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs devtmpfs /dev
}

# 9p and overlay are modules in Debian's kernel; load them in the order
# mkinitramfs.sh worked out from modules.dep.
load_early_modules() {
	local ko

	[ -f /modules/load-order ] || return 0
	while read -r ko; do
		insmod "/modules/$ko" || die "insmod $ko failed"
	done < /modules/load-order
}

mount_control_dir() {
	mkdir -p "$CTL"
	mount -t 9p -o "$P9_OPTS" uringfs-ctl "$CTL" ||
		die "cannot mount the control directory (no 9p in this kernel?)"
}

# The host's / is the lower layer, so every host tool is there; the tmpfs
# upper layer lets the guest write anywhere without touching the host.
mount_root_overlay() {
	mkdir -p /lower /rw "$NEWROOT"
	mount -t 9p -o "$P9_OPTS,ro,cache=loose" uringfs-root /lower ||
		die "cannot mount the host root over 9p"
	mount -t tmpfs -o mode=0755 rw /rw
	mkdir -p /rw/upper /rw/work
	mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
		overlay "$NEWROOT" || die "cannot mount the root overlay"
}

# modprobe in the guest looks under /usr/lib/modules/$(uname -r); the
# host's tree for this kernel lives in the cache, visible through the root.
# Bound before the fresh /tmp and /run hide a cache that lives there.
bind_module_tree() {
	local tree dest

	tree=$(cat "$ctl/modules")
	[ -n "$tree" ] || return 0
	[ -d "$NEWROOT$tree" ] || die "module tree $tree not visible in the guest"
	dest="$NEWROOT/usr/lib/modules/$(uname -r)"
	mkdir -p "$dest"
	mount --bind "$NEWROOT$tree" "$dest"
}

# Fresh API file systems and scratch space, as on a booted system.
mount_root_filesystems() {
	local dir

	mount -t proc proc "$NEWROOT/proc"
	mount -t sysfs sysfs "$NEWROOT/sys"
	mount -t devtmpfs devtmpfs "$NEWROOT/dev"
	# What udev does on a real system: ordinary users mount through
	# fusermount3, which opens /dev/fuse as the user.
	if [ -c "$NEWROOT/dev/fuse" ]; then
		chmod 0666 "$NEWROOT/dev/fuse"
	fi
	mkdir -p "$NEWROOT/dev/pts" "$NEWROOT/dev/shm"
	mount -t devpts -o newinstance,ptmxmode=0666 devpts "$NEWROOT/dev/pts"
	mount -t tmpfs -o mode=1777 shm "$NEWROOT/dev/shm"
	for dir in /tmp /var/tmp; do
		mount -t tmpfs -o mode=1777 tmpfs "$NEWROOT$dir"
	done
	mount -t tmpfs -o mode=0755 run "$NEWROOT/run"
	mount -t fusectl fusectl "$NEWROOT/sys/fs/fuse/connections" ||
		die "cannot mount fusectl (kernel without FUSE?)"
	# Tests confine their daemons in cgroups; not fatal where unsupported.
	mount -t cgroup2 cgroup2 "$NEWROOT/sys/fs/cgroup" 2> /dev/null || true
}

# Without udev or systemd, nothing creates the device nodes whose first open
# loads a module (/dev/loop-control, /dev/btrfs-control, /dev/cuse, ...), so
# "mount -o loop" would find no loop driver. Make them from modules.devname,
# as "kmod static-nodes" does for systemd.
make_static_nodes() {
	local list _module name dev type major minor

	list="$NEWROOT/usr/lib/modules/$(uname -r)/modules.devname"
	[ -f "$list" ] || return 0
	while read -r _module name dev; do
		case "$_module" in '#'* | '') continue ;; esac
		[ ! -e "$NEWROOT/dev/$name" ] || continue
		type=${dev%"${dev#?}"}
		major=${dev#?}
		major=${major%%:*}
		minor=${dev##*:}
		mkdir -p "$(dirname "$NEWROOT/dev/$name")"
		mknod -m 0600 "$NEWROOT/dev/$name" "$type" "$major" "$minor"
	done < "$list"
}

move_control_dir_into_root() {
	mkdir -p "$NEWROOT$GUEST_CTL"
	mount --move "$CTL" "$NEWROOT$GUEST_CTL"
	ctl=$NEWROOT$GUEST_CTL
}

# cache=mmap keeps the share coherent with the host while still allowing
# shared writable mappings, which the build and tests may use. A share under
# /tmp or /run needs its mount point made in the guest's fresh tmpfs.
mount_shares() {
	local n=0 path

	while IFS= read -r path; do
		mkdir -p "$NEWROOT$path"
		mount -t 9p -o "$P9_OPTS,cache=mmap" "uringfs-share$n" "$NEWROOT$path" ||
			die "cannot mount share $path"
		n=$((n + 1))
	done < "$ctl/shares"
}

find_output_port() {
	local dir

	for dir in /sys/class/virtio-ports/*; do
		if [ "$(cat "$dir/name" 2> /dev/null)" = "$OUTPUT_PORT_NAME" ]; then
			echo "/dev/${dir##*/}"
			return 0
		fi
	done
	return 1
}

# Runs in a clean environment; cmd.sh exports what the command should see.
run_command() {
	local port status=0

	port=$(find_output_port) || die "no virtio-serial port $OUTPUT_PORT_NAME"
	: > "$ctl/started"
	# Not chroot(2) alone: a chrooted process may not make a user
	# namespace (unshare(2): EPERM), which an idmapped mount needs
	# (t_idmap).  In a mount namespace of its own the root moves onto /,
	# and the command's root is the namespace's, as after switch_root.
	# shellcheck disable=SC2016 # expanded by the inner shell
	unshare -m sh -c 'cd "$1" && mount --move . / && exec chroot . /usr/bin/env -i \
		/bin/bash --noprofile --norc "$2"' sh "$NEWROOT" "$GUEST_CTL/cmd.sh" \
		< /dev/null > "$port" 2>&1 || status=$?
	echo "$status" > "$ctl/status"
}

# systemd as PID 1 on the same root: the command runs as a service, whose
# ExecStopPost= does what run_command and main do below (status, sync of
# the shares, power off).  No default dependencies: the command starts at
# once, and whatever it starts pulls in what that needs.
boot_systemd() {
	local port unit=$NEWROOT/etc/systemd/system/uringfs-vm-cmd.service

	port=$(find_output_port) || die "no virtio-serial port $OUTPUT_PORT_NAME"
	mkdir -p "${unit%/*}"
	: > "$NEWROOT/etc/fstab"
	cat > "$unit" << EOF
[Unit]
Description=run-guest.sh's command
DefaultDependencies=no
[Service]
Type=oneshot
StandardInput=null
StandardOutput=file:$port
StandardError=inherit
ExecStartPre=/bin/touch $GUEST_CTL/started
ExecStart=/usr/bin/env -i /bin/bash --noprofile --norc $GUEST_CTL/cmd.sh
ExecStopPost=/bin/sh -c 'echo \$\${EXIT_STATUS:-125} > $GUEST_CTL/status; while read -r p; do sync -f "\$\$p"; done < $GUEST_CTL/shares; exec /bin/systemctl poweroff --force --force'
TimeoutStartSec=infinity
EOF
	exec switch_root "$NEWROOT" /lib/systemd/systemd --unit=uringfs-vm-cmd.service
}

# Flush only the shares, and power off with -n (no global sync): a FUSE
# mount the command left behind with a hung daemon must not be able to stop
# the guest from shutting down.
sync_shares() {
	local path

	while IFS= read -r path; do
		sync -f "$NEWROOT$path" || true
	done < "$ctl/shares"
}

main() {
	mount_kernel_filesystems
	load_early_modules
	mount_control_dir
	mount_root_overlay
	bind_module_tree
	mount_root_filesystems
	make_static_nodes
	move_control_dir_into_root
	mount_shares
	hostname uringfs-vm
	ip link set lo up 2> /dev/null || true
	if [ "$(cat "$ctl/init" 2> /dev/null)" = systemd ]; then
		boot_systemd
	fi
	run_command
	sync_shares
	poweroff -n -f
}

main
