#!/bin/bash
#
# mkinitramfs.sh - build the test guest's initramfs
#
# Usage: tests/vm/mkinitramfs.sh [--modules DIR] OUTPUT
#
# The initramfs holds a static busybox, guest-init.sh as /init, a
# /sbin/modprobe that defers to the real root, and, when DIR (a kernel's
# lib/modules/<release> tree, with modules.dep) is given, the modules the
# guest needs before its root exists: 9p over virtio and overlayfs, with their
# dependencies. Those already built into the kernel are left out, so a kernel
# with everything built in needs no DIR at all.
#
# Everything else the guest runs comes from the host's / over 9p, so the
# image stays a few megabytes and takes well under a second to build.

set -euo pipefail

# What /init needs to mount the root: the 9p transport, the file system and
# overlayfs. Dependencies (netfs, 9pnet) are found through modules.dep.
readonly EARLY_MODULES=(9pnet_virtio 9p overlay)

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
readonly script_dir
stage=

remove_stage() {
	[[ -z "$stage" ]] || rm -rf "$stage"
}

die() {
	echo "mkinitramfs: $*" >&2
	exit 1
}

usage() {
	echo "usage: $0 [--modules DIR] OUTPUT" >&2
	exit 2
}

# The initramfs has no C library, so busybox must be the static build.
find_static_busybox() {
	local bb

	bb=$(command -v busybox) || die "busybox not found (install busybox-static)"
	if ldd "$bb" > /dev/null 2>&1; then
		die "$bb is dynamically linked (install busybox-static)"
	fi
	echo "$bb"
}

install_busybox() {
	local stage=$1 bb applet

	bb=$(find_static_busybox)
	mkdir -p "$stage/bin"
	cp "$bb" "$stage/bin/busybox"
	for applet in $("$bb" --list); do
		# Debian's build lists itself as an applet.
		[[ "$applet" == busybox ]] || ln -s busybox "$stage/bin/$applet"
	done
}

# The kernel runs /sbin/modprobe in PID 1's root, which is the initramfs
# while the command runs chrooted; send it to the real root, whose modprobe
# knows .ko.xz and sees the module tree.
install_modprobe_shim() {
	local stage=$1

	mkdir -p "$stage/sbin"
	cat > "$stage/sbin/modprobe" <<-'EOF'
		#!/bin/sh
		exec /bin/chroot /newroot /sbin/modprobe "$@"
	EOF
	chmod 0755 "$stage/sbin/modprobe"
}

is_builtin() {
	local tree=$1 name=$2

	[[ -f "$tree/modules.builtin" ]] &&
		grep -qE "(^|/)$name\.ko\$" "$tree/modules.builtin"
}

# Print the modules.dep line's paths for module NAME: the module first, then
# what it depends on, nearest first.
module_and_deps() {
	local tree=$1 name=$2

	awk -v name="$name" '
		{
			path = $1
			sub(/:$/, "", path)
			base = path
			sub(/.*\//, "", base)
			sub(/\.ko(\.[a-z]+)?$/, "", base)
			gsub(/-/, "_", base)
			if (base == name) {
				for (i = 1; i <= NF; i++) {
					p = $i
					sub(/:$/, "", p)
					print p
				}
				found = 1
				exit
			}
		}
		END { exit !found }' "$tree/modules.dep"
}

# modules.dep lists a module's full dependency closure; loading that list
# backwards, then the module, is the order modprobe itself uses.
resolve_load_order() {
	local tree=$1 name deps i
	local -A seen=()

	[[ -f "$tree/modules.dep" ]] || die "$tree has no modules.dep (run depmod)"
	for name in "${EARLY_MODULES[@]}"; do
		if is_builtin "$tree" "$name"; then
			continue
		fi
		mapfile -t deps < <(module_and_deps "$tree" "$name")
		[[ ${#deps[@]} -gt 0 ]] || die "kernel in $tree has no module $name (wrong flavour?)"
		for ((i = ${#deps[@]} - 1; i >= 0; i--)); do
			if [[ -z "${seen[${deps[i]}]:-}" ]]; then
				seen[${deps[i]}]=1
				echo "${deps[i]}"
			fi
		done
	done
}

# busybox insmod wants plain .ko files; the distribution compresses them.
decompress_module() {
	local src=$1 dest=$2

	case "$src" in
	*.ko.xz) xz -dc "$src" > "$dest" ;;
	*.ko.zst) zstd -qdc "$src" > "$dest" ;;
	*.ko.gz) gzip -dc "$src" > "$dest" ;;
	*.ko) cp "$src" "$dest" ;;
	*) die "unknown module format: $src" ;;
	esac
}

install_early_modules() {
	local stage=$1 tree=$2 order rel name

	# Not a process substitution: its failure would go unnoticed.
	order=$(resolve_load_order "$tree")
	mkdir -p "$stage/modules"
	: > "$stage/modules/load-order"
	while IFS= read -r rel; do
		[[ -n "$rel" ]] || continue
		name=${rel##*/}
		name=${name%.ko*}.ko
		decompress_module "$tree/$rel" "$stage/modules/$name"
		echo "$name" >> "$stage/modules/load-order"
	done <<< "$order"
}

make_skeleton() {
	local stage=$1

	mkdir -p "$stage"/{dev,proc,sys,newroot}
	install -m 0755 "$script_dir/guest-init.sh" "$stage/init"
}

write_cpio() {
	local stage=$1 output=$2

	(cd "$stage" && find . -print0 | LC_ALL=C sort -z |
		cpio --null --create --format=newc --quiet) > "$output.tmp"
	mv "$output.tmp" "$output"
}

main() {
	local modules='' output

	while [[ $# -gt 0 ]]; do
		case "$1" in
		--modules)
			[[ $# -ge 2 ]] || usage
			modules=$2
			shift 2
			;;
		-*) usage ;;
		*) break ;;
		esac
	done
	[[ $# -eq 1 ]] || usage
	output=$1

	trap remove_stage EXIT
	stage=$(mktemp -d "${TMPDIR:-/tmp}/uringfs-initramfs.XXXXXX")

	make_skeleton "$stage"
	install_busybox "$stage"
	install_modprobe_shim "$stage"
	if [[ -n "$modules" ]]; then
		[[ -d "$modules" ]] || die "no module tree at $modules"
		install_early_modules "$stage" "$modules"
	fi
	write_cpio "$stage" "$output"
}

main "$@"
