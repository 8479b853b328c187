#!/bin/bash
#
# build-kernel.sh - build the test guest's kernel with IORING_OP_COPY_FILE_RANGE
#
# Usage: tests/kernel/build-kernel.sh [OUTDIR]
#
# Fetches Debian experimental's linux-source-7.3 through a private apt
# configuration (tests/vm/private-apt.sh: nothing is installed from
# experimental, and the system's apt sources are not touched), unpacks it,
# applies 0001-io_uring-add-IORING_OP_COPY_FILE_RANGE.patch, configures it with
# "make tinyconfig" plus config.fragment, checks that every option of the
# fragment survived, and builds bzImage. Leaves in OUTDIR:
#
#   bzImage        the kernel, for tests/vm/run-guest.sh --kernel
#   config         its .config
#   kernelrelease  the output of "make kernelrelease"
#   stamp          hash of the patch and fragment it was built from
#
# OUTDIR defaults to $UFS_VM_CACHE/kernel-cfr, else
# /var/cache/uringfs-vm/kernel-cfr. The unpacked tree stays in OUTDIR/src,
# so a changed patch or fragment rebuilds incrementally. With an up-to-date
# bzImage the script only prints the paths.
#
# Missing build tools are installed with the system's apt-get (as root).
#
# Exit status: 0 on success, 77 when the archive cannot give us the source
# or the build tools (the cause, as apt gave it, is the last line on
# stderr), 1 on any other error.

set -euo pipefail

readonly SOURCE_PACKAGE=linux-source-7.3
readonly ARCHIVE_SUITE=experimental
readonly PATCH_NAME=0001-io_uring-add-IORING_OP_COPY_FILE_RANGE.patch
# Debian package => a command it provides, for what the build runs.
readonly -A BUILD_TOOLS=(
	[make]=make [gcc]=gcc [libc6-dev]=/usr/include/stdio.h
	[bc]=bc [bison]=bison [flex]=flex [perl]=perl
	[xz-utils]=xz [patch]=patch [libelf-dev]=/usr/include/libelf.h
)

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
readonly script_dir
# shellcheck source=../vm/private-apt.sh source-path=SCRIPTDIR
. "$script_dir/../vm/private-apt.sh"
readonly patch_file=$script_dir/$PATCH_NAME
readonly fragment=$script_dir/config.fragment

out_dir=
apt_dir=
tree=

say() {
	echo "build-kernel: $*" >&2
}

die() {
	say "$*"
	exit 1
}

skip() {
	say "SKIP: $*"
	exit 77
}

usage() {
	echo "usage: $0 [OUTDIR]" >&2
	exit 2
}

# What the output depends on; the source tree is pinned by the suite.
input_hash() {
	cat "$patch_file" "$fragment" | sha256sum | cut -d ' ' -f 1
}

print_result() {
	echo "bzImage:       $out_dir/bzImage"
	echo "config:        $out_dir/config"
	echo "kernelrelease: $(cat "$out_dir/kernelrelease")"
}

is_up_to_date() {
	[[ -f "$out_dir/bzImage" && -f "$out_dir/kernelrelease" && -f "$out_dir/stamp" ]] &&
		[[ "$(cat "$out_dir/stamp")" == "$(input_hash)" ]]
}

install_build_tools() {
	local pkg tool missing=()

	for pkg in "${!BUILD_TOOLS[@]}"; do
		tool=${BUILD_TOOLS[$pkg]}
		if [[ "$tool" == /* ]]; then
			[[ -e "$tool" ]] || missing+=("$pkg")
		else
			command -v "$tool" > /dev/null || missing+=("$pkg")
		fi
	done
	[[ ${#missing[@]} -gt 0 ]] || return 0
	[[ $EUID -eq 0 ]] || die "missing build tools, install as root: ${missing[*]}"
	say "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"${missing[@]}" > "$out_dir/apt-install.log" 2>&1 ||
		skip "cannot install ${missing[*]}: $(pa_log_error "$out_dir/apt-install.log")" \
			"(log: $out_dir/apt-install.log)"
}

private_apt() {
	pa_apt "$@"
}

update_package_lists() {
	local err

	pa_setup "$apt_dir" "$ARCHIVE_SUITE" || skip "$pa_error"
	pa_update || skip "$pa_error"
	err=$(private_apt apt-cache show "$SOURCE_PACKAGE" 2>&1 > /dev/null) ||
		skip "$ARCHIVE_SUITE at $pa_mirror has no $SOURCE_PACKAGE: $err"
}

# apt drops privileges to _apt while downloading into the directory.
download_source_deb() {
	local dl=$apt_dir/download

	rm -rf "$dl"
	mkdir -p "$dl"
	if [[ $EUID -eq 0 ]] && id _apt > /dev/null 2>&1; then
		chown _apt "$dl"
	fi
	(cd "$dl" && private_apt apt-get download "$SOURCE_PACKAGE") \
		> "$apt_dir/download.log" 2>&1 ||
		skip "cannot download $SOURCE_PACKAGE: $(pa_log_error "$apt_dir/download.log")" \
			"(log: $apt_dir/download.log)"
	echo "$dl"/*.deb
}

# The .deb holds the tree as usr/src/linux-source-7.3.tar.xz. Unpacked
# beside the final place and renamed, so a half-done tree is never used.
unpack_source() {
	local deb=$1 stage=$out_dir/src.tmp

	rm -rf "$stage"
	mkdir -p "$stage"
	say "unpacking $(basename "$deb")"
	dpkg-deb --fsys-tarfile "$deb" |
		tar -xO "./usr/src/$SOURCE_PACKAGE.tar.xz" |
		tar -xJ -C "$stage"
	[[ -f "$stage/$SOURCE_PACKAGE/Makefile" ]] || die "no $SOURCE_PACKAGE/Makefile in $deb"
	dpkg-deb --field "$deb" Version > "$stage/$SOURCE_PACKAGE/.debian-version"
	rm -rf "$out_dir/src"
	mv "$stage" "$out_dir/src"
	rm -rf "$apt_dir/download"
}

fetch_source() {
	local deb

	update_package_lists
	say "downloading $SOURCE_PACKAGE from $ARCHIVE_SUITE"
	deb=$(download_source_deb)
	unpack_source "$deb"
}

# The tree keeps a copy of the patch it carries. A different patch is
# reversed first, so that only the touched files rebuild; a tree that does
# not take that cleanly is fetched again.
apply_patch() {
	local applied=$tree/.uringfs-applied.patch

	if [[ -f "$applied" ]] && cmp -s "$applied" "$patch_file"; then
		return 0
	fi
	if [[ -f "$applied" ]]; then
		say "reverting the previous patch"
		patch -d "$tree" -p1 -R --batch --quiet < "$applied" || return 1
		rm -f "$applied"
	fi
	say "applying $PATCH_NAME"
	patch -d "$tree" -p1 --forward --batch --quiet < "$patch_file" || return 1
	cp "$patch_file" "$applied"
}

prepare_tree() {
	if [[ -f "$tree/Makefile" ]] && apply_patch; then
		return 0
	fi
	fetch_source
	apply_patch || die "$PATCH_NAME does not apply to $SOURCE_PACKAGE $(cat "$tree/.debian-version")"
}

kmake() {
	make -C "$tree" -s "$@"
}

configure_kernel() {
	say "configuring: tinyconfig + $(basename "$fragment")"
	kmake tinyconfig > "$out_dir/config.log" 2>&1
	(cd "$tree" && scripts/kconfig/merge_config.sh -m .config "$fragment") \
		>> "$out_dir/config.log" 2>&1
	kmake olddefconfig >> "$out_dir/config.log" 2>&1
}

# olddefconfig drops options whose dependencies are off without a word.
# Every assignment of the fragment must be in .config as written.
check_config() {
	local line missing=()

	while IFS= read -r line; do
		[[ "$line" =~ ^CONFIG_[A-Za-z0-9_]+= ]] || continue
		grep -qxF "$line" "$tree/.config" || missing+=("${line%%=*}")
	done < "$fragment"
	[[ ${#missing[@]} -eq 0 ]] ||
		die "not set after olddefconfig (missing dependencies?): ${missing[*]}"
}

build_kernel() {
	local start=$SECONDS

	say "building bzImage with -j$(nproc) (log: $out_dir/build.log)"
	if ! kmake -j"$(nproc)" bzImage > "$out_dir/build.log" 2>&1; then
		tail -n 30 "$out_dir/build.log" >&2
		die "kernel build failed (log: $out_dir/build.log)"
	fi
	say "built in $((SECONDS - start)) s"
}

# bzImage last and the stamp after it: an interrupted run never leaves a
# stamp that matches a stale kernel.
install_result() {
	rm -f "$out_dir/stamp"
	cp "$tree/.config" "$out_dir/config"
	kmake kernelrelease > "$out_dir/kernelrelease"
	cp "$tree/arch/x86/boot/bzImage" "$out_dir/bzImage.tmp"
	mv "$out_dir/bzImage.tmp" "$out_dir/bzImage"
	input_hash > "$out_dir/stamp"
}

main() {
	[[ $# -le 1 ]] || usage
	[[ "${1:-}" != -* ]] || usage
	[[ -f "$patch_file" && -f "$fragment" ]] || die "patch or fragment missing in $script_dir"
	out_dir=${1:-${UFS_VM_CACHE:-/var/cache/uringfs-vm}/kernel-cfr}
	mkdir -p "$out_dir"
	out_dir=$(cd "$out_dir" && pwd -P)
	apt_dir=$out_dir/apt
	tree=$out_dir/src/$SOURCE_PACKAGE

	# Parallel callers (run-cfr-guest.sh from several tests): one builds.
	exec {lock_fd}> "$out_dir/.lock"
	flock "$lock_fd"

	if ! is_up_to_date; then
		install_build_tools
		prepare_tree
		configure_kernel
		check_config
		build_kernel
		install_result
	fi
	print_result
}

main "$@"
