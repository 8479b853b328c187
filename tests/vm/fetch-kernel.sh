#!/bin/bash
#
# fetch-kernel.sh - download Debian experimental's 7.3 kernel for the test guest
#
# Usage: tests/vm/fetch-kernel.sh [CACHE_DIR]
#
# Fetches the parts of linux-image-7.3-amd64 (vmlinuz and modules) plus the
# matching linux-libc-dev, unpacks them with dpkg -x and builds modules.dep, so
# that run-guest.sh can boot the kernel under qemu. Nothing is installed on
# the host: apt runs with a private configuration (private-apt.sh) whose
# lists, archives and dpkg status all live inside CACHE_DIR.
#
# CACHE_DIR defaults to $UFS_VM_CACHE, else /var/cache/uringfs-vm.
# A second run finds everything in place and only prints the paths.
#
# Exit status: 0 on success, 77 when the archive cannot give us the kernel
# (no mirror, no keyring, apt failed, no such package), 1 on any other
# error. Either way the last line on stderr says why, as apt said it.

set -euo pipefail

readonly KERNEL_SERIES=7.3
readonly KERNEL_FLAVOUR=amd64
readonly KERNEL_RELEASE="$KERNEL_SERIES-$KERNEL_FLAVOUR"
readonly ARCHIVE_SUITE=experimental

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
readonly script_dir
# shellcheck source=private-apt.sh source-path=SCRIPTDIR
. "$script_dir/private-apt.sh"

cache_dir=
apt_dir=

die() {
	echo "fetch-kernel: $*" >&2
	exit 1
}

# Exit 77: the archive cannot give us the kernel. The caller decides whether
# that is a skip (a developer's machine offline) or a failure (CI), so the
# message must be the cause itself: its callers show it as it is.
skip() {
	echo "fetch-kernel: SKIP: $*" >&2
	exit 77
}

usage() {
	echo "usage: $0 [CACHE_DIR]" >&2
	exit 2
}

modules_dir() {
	echo "$cache_dir/kernel/usr/lib/modules/$KERNEL_RELEASE"
}

stamp_file() {
	echo "$cache_dir/.complete-$KERNEL_RELEASE"
}

# Everything run-guest.sh and the ABI check need, and the stamp written last,
# so that an interrupted run is never mistaken for a complete one.
cache_is_complete() {
	[[ -f "$(stamp_file)" &&
	   -f "$(modules_dir)/vmlinuz" &&
	   -f "$(modules_dir)/modules.dep" &&
	   -f "$cache_dir/libc-dev/usr/include/linux/fuse.h" ]]
}

print_paths() {
	echo "kernel:       $(modules_dir)/vmlinuz"
	echo "modules:      $(modules_dir)"
	echo "uapi headers: $cache_dir/libc-dev/usr/include"
	echo "packages:     $(paste -sd ' ' "$(stamp_file)")"
}

private_apt() {
	pa_apt "$@"
}

update_package_lists() {
	pa_setup "$apt_dir" "$ARCHIVE_SUITE" "$KERNEL_FLAVOUR" || skip "$pa_error"
	pa_update || skip "$pa_error"
}

# linux-image-7.3-amd64 is only a meta package; the files are in the
# linux-*-7.3-amd64 packages it depends on (base, binary, modules). Asking
# apt rather than hard-coding them follows Debian if it splits them again.
kernel_packages() {
	local meta="linux-image-$KERNEL_RELEASE"

	private_apt apt-cache depends --no-recommends --no-suggests \
			--no-conflicts --no-breaks --no-replaces --no-enhances "$meta" |
		awk -v rel="$KERNEL_RELEASE" '
			$1 == "Depends:" && $2 ~ ("^linux-.*-" rel "$") { print $2 }'
}

# apt drops privileges to _apt while downloading; give it the directory so
# it need not fall back to downloading unsandboxed.
make_download_dir() {
	local dir=$1

	rm -rf "$dir"
	mkdir -p "$dir"
	if [[ $EUID -eq 0 ]] && id _apt > /dev/null 2>&1; then
		chown _apt "$dir"
	fi
}

download_packages() {
	local dir=$1
	shift

	(cd "$dir" && private_apt apt-get download "$@") > "$apt_dir/download.log" 2>&1 ||
		skip "cannot download $*: $(pa_log_error "$apt_dir/download.log")" \
			"(log: $apt_dir/download.log)"
}

# Unpack into a scratch directory and rename it into place, so a half-done
# extraction never looks like a usable tree.
extract_debs() {
	local dest=$1 deb
	shift

	rm -rf "$dest.tmp"
	mkdir -p "$dest.tmp"
	for deb in "$@"; do
		dpkg-deb -x "$deb" "$dest.tmp"
	done
}

commit_dir() {
	local dest=$1

	rm -rf "$dest"
	mv "$dest.tmp" "$dest"
}

# The debs ship no modules.dep; the guest's modprobe needs one.
build_module_index() {
	local tree=$1

	[[ -f "$tree/usr/lib/modules/$KERNEL_RELEASE/vmlinuz" ]] ||
		die "no vmlinuz in the downloaded packages"
	depmod -b "$tree/usr" "$KERNEL_RELEASE"
}

package_versions() {
	local deb

	for deb in "$@"; do
		# ${...} here is dpkg-deb's field syntax, not the shell's.
		# shellcheck disable=SC2016
		dpkg-deb --show --showformat='${Package}=${Version}\n' "$deb"
	done
}

fetch_all() {
	local dl="$cache_dir/debs" parts err

	rm -f "$(stamp_file)"
	update_package_lists
	err=$(private_apt apt-cache show "linux-image-$KERNEL_RELEASE" 2>&1 > /dev/null) ||
		skip "$ARCHIVE_SUITE at $pa_mirror has no linux-image-$KERNEL_RELEASE: $err"
	mapfile -t parts < <(kernel_packages)
	[[ ${#parts[@]} -gt 0 ]] || die "cannot resolve the parts of linux-image-$KERNEL_RELEASE"

	echo "fetch-kernel: downloading ${parts[*]} linux-libc-dev" >&2
	make_download_dir "$dl/kernel"
	download_packages "$dl/kernel" "${parts[@]}"
	make_download_dir "$dl/libc-dev"
	download_packages "$dl/libc-dev" "linux-libc-dev/$ARCHIVE_SUITE"

	extract_debs "$cache_dir/kernel" "$dl"/kernel/*.deb
	build_module_index "$cache_dir/kernel.tmp"
	extract_debs "$cache_dir/libc-dev" "$dl"/libc-dev/*.deb
	commit_dir "$cache_dir/kernel"
	commit_dir "$cache_dir/libc-dev"

	package_versions "$dl"/*/*.deb > "$(stamp_file).tmp"
	mv "$(stamp_file).tmp" "$(stamp_file)"
	# The unpacked trees are all the guest needs; the debs would double the
	# size of a CI cache.
	rm -rf "$dl"
}

main() {
	[[ $# -le 1 ]] || usage
	[[ "${1:-}" != -* ]] || usage
	cache_dir=${1:-${UFS_VM_CACHE:-/var/cache/uringfs-vm}}
	mkdir -p "$cache_dir"
	cache_dir=$(cd "$cache_dir" && pwd -P)
	apt_dir="$cache_dir/apt"

	# Parallel test runs may all try to fetch; let one do it.
	exec {lock_fd}> "$cache_dir/.lock"
	flock "$lock_fd"

	if ! cache_is_complete; then
		fetch_all
	fi
	print_paths
}

main "$@"
