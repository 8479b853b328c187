#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The Debian package (debian/): build it twice from a copy of the tree, as
# versions N and N+1 (a temporary changelog entry each), install N, mount
# with "mount -t fuse.uringfs" run without PATH (mount.fuse3 finds
# /usr/bin/uringfs on /bin/sh's default path), keep a writer appending to a
# file it holds open, install N+1, and check that the upgrade handed the
# mount over: the writer saw no error, the data is whole, and the mount is
# served by a new process of the new /usr/bin/uringfs.  Then remove (the
# mount stays, served, and dpkg's output names it), unmount, purge: nothing
# of the package's files is left.
#
# Takes 1.5 minutes on a quiet 2-core machine, 4 on a loaded one (two
# package builds), and installs a package, so it is not part of make check;
# run it as root: tests/ops/package.sh, or scripts/fresh-root-check --package.  It installs and purges
# the package uringfs on this system, and refuses to run if it is installed.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_need_root
[[ -e /dev/fuse ]] || t_skip_all "no /dev/fuse"
[[ -d $srcdir/debian ]] || t_skip_all "no debian/ in $srcdir"
missing=()
for tool in dpkg-buildpackage dpkg-checkbuilddeps dh git mount.fuse3 findmnt; do
	command -v "$tool" >/dev/null || missing+=("$tool")
done
((${#missing[@]} == 0)) ||
	t_cannot_run "missing ${missing[*]} (scripts/install-deps installs them: dpkg-dev, debhelper, git, fuse3)"
deps=$(cd "$srcdir" && dpkg-checkbuilddeps 2>&1) ||
	t_cannot_run "the package's build dependencies are missing: ${deps##*: }"
if dpkg-query -W -f='${Status}' uringfs 2>/dev/null | grep -q 'installed$'; then
	t_skip_all "the package uringfs is installed here: this test installs and purges it"
fi
if [[ -e /usr/bin/uringfs ]]; then
	t_skip_all "/usr/bin/uringfs exists and is not the package's"
fi
found=$(env -i /bin/sh -c 'command -v uringfs' || true)
if [[ -n $found ]]; then
	t_skip_all "mount.fuse3 would run $found (found before /usr/bin on /bin/sh's default path), not the package's"
fi
git -C "$srcdir" rev-parse --git-dir >/dev/null 2>&1 ||
	t_cannot_run "$srcdir is not a git work tree (the test copies the files git knows)"

tmp=$(mktemp -d /tmp/ufs-package.XXXXXX)
writer=''
installed=''
cleanup() {
	[[ -n $writer ]] && kill "$writer" 2>/dev/null
	if findmnt -M "$tmp/mnt" >/dev/null 2>&1; then
		umount "$tmp/mnt" 2>/dev/null || umount -l "$tmp/mnt"
	fi
	[[ -n $installed ]] && dpkg --purge uringfs >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/src" "$tmp/mnt"

base=$(cd "$srcdir" && dpkg-parsechangelog -S Version)

# build VERSION: build the package as VERSION in $tmp/VERSION/; prints the .deb.
build() {
	local dir=$tmp/$1 log=$tmp/build-$1.log
	mkdir -p "$dir/uringfs"
	git -C "$srcdir" ls-files -z -co --exclude-standard |
		(cd "$srcdir" && tar --null -T - -cf -) | tar -xf - -C "$dir/uringfs"
	{
		printf 'uringfs (%s) unstable; urgency=medium\n\n' "$1"
		printf '  * Test build of tests/ops/package.sh.\n\n'
		printf ' -- uringfs tests <tests@uringfs.invalid>  %s\n\n' "$(date -R)"
		cat "$dir/uringfs/debian/changelog"
	} >"$dir/changelog" && mv "$dir/changelog" "$dir/uringfs/debian/changelog"
	if ! (cd "$dir/uringfs" && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
		tail -n 20 "$log" | t_diag >&2
		return 1
	fi
	ls "$dir"/uringfs_"$1"_*.deb
}

# The pid of the daemon whose command line names the mount point.
daemon_pid() {
	local exe pid
	for exe in /proc/[0-9]*/exe; do
		[[ $(readlink "$exe" 2>/dev/null) == /usr/bin/uringfs* ]] || continue
		pid=${exe#/proc/}
		pid=${pid%/exe}
		if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$tmp/mnt"; then
			echo "$pid"
			return 0
		fi
	done
}

v1=$base+pkgtest1
v2=$base+pkgtest2
start=$SECONDS
deb1=$(build "$v1") || true
t_check "builds as $v1" test -n "$deb1"
deb2=$(build "$v2") || true
t_check "builds as $v2" test -n "$deb2"
echo "# two builds: $((SECONDS - start)) s"
[[ -n $deb1 && -n $deb2 ]] || {
	t_done
	exit 0
}

etc_before=
if [[ -e /etc/uringfs ]]; then etc_before=yes; fi
installed=1
dpkg -i "$deb1" >"$tmp/dpkg1.log" 2>&1 && st=0 || st=$?
t_result "$st" "dpkg -i $v1"
[[ $st == 0 ]] || t_diag <"$tmp/dpkg1.log"
dpkg -L uringfs | sort >"$tmp/files"
absent=()
for f in /usr/bin/uringfs /lib/systemd/system/uringfs@.service \
	/etc/uringfs/uringfs.conf.example /usr/share/man/man8/uringfs.8.gz \
	/usr/share/man/man5/uringfs.conf.5.gz; do
	grep -qxF -e "$f" "$tmp/files" || absent+=("$f")
done
t_check "it installs the daemon, the unit, the config, the man pages (missing: ${absent[*]:-none})" \
	test ${#absent[@]} = 0
t_check "the example config is a conffile" \
	grep -qF /etc/uringfs/uringfs.conf.example /var/lib/dpkg/info/uringfs.conffiles

# mount(8) and mount.fuse3 with no PATH at all.
env -i /bin/mount -t fuse.uringfs -o nosuid "$tmp/src" "$tmp/mnt" >"$tmp/mount.log" 2>&1 &&
	st=0 || st=$?
t_result "$st" "env -i mount -t fuse.uringfs SOURCE MOUNTPOINT"
[[ $st == 0 ]] || t_diag <"$tmp/mount.log"
old=$(daemon_pid)
t_check "the mount is served by /usr/bin/uringfs (pid ${old:-none})" test -n "$old"

# The writer holds the file open across the upgrade: lines 0, 1, 2, ...
(
	exec 3>>"$tmp/mnt/log"
	i=0
	while [[ ! -e $tmp/stop ]]; do
		if ! printf '%d\n' "$i" >&3; then
			echo "write $i failed" >"$tmp/writer-error"
			exit 1
		fi
		i=$((i + 1))
		echo "$i" >"$tmp/count"
		sleep 0.01
	done
) &
writer=$!
# written_at_least N: the writer has written N lines.
written_at_least() {
	local n
	n=$(cat "$tmp/count" 2>/dev/null) || return 1
	((${n:-0} >= $1))
}

# Some lines before the upgrade; the writer goes on while dpkg runs.
wait_for 30 written_at_least 20 || true
before=$(cat "$tmp/count" 2>/dev/null || echo 0)

dpkg -i "$deb2" >"$tmp/dpkg2.log" 2>&1 && st=0 || st=$?
t_result "$st" "dpkg -i $v2 with the mount live"
t_diag <"$tmp/dpkg2.log"
t_check "the upgrade names the hand-over" grep -qF "handing $tmp/mnt over" "$tmp/dpkg2.log"
t_check "the old daemon (pid $old) has exited" wait_for 30 test ! -d "/proc/$old"
new=$(daemon_pid)
t_check "a new daemon (pid ${new:-none}) serves the mount" test "${new:-$old}" != "$old"
exe=$(readlink "/proc/${new:-0}/exe" 2>/dev/null || true)
t_check "it runs the installed /usr/bin/uringfs ($exe)" test "$exe" = /usr/bin/uringfs
t_check "the package is $v2" test "$(dpkg-query -W -f='${Version}' uringfs)" = "$v2"

# The writer goes on through the new daemon, then stops.
wait_for 30 written_at_least $((before + 50)) || true
touch "$tmp/stop"
st=0
wait "$writer" || st=$?
writer=''
t_result "$st" "the writer saw no error ($(cat "$tmp/writer-error" 2>/dev/null || echo none))"
count=$(cat "$tmp/count")
t_check "it wrote on after the upgrade ($before lines before it, $count in all)" \
	test "$count" -gt "$before"
seq 0 $((count - 1)) >"$tmp/expected"
t_check "the file through the mount holds every line, once, in order" cmp -s "$tmp/expected" "$tmp/mnt/log"
t_check "and so does SOURCE" cmp -s "$tmp/expected" "$tmp/src/log"

# Remove with the mount live: it stays, served, and dpkg's output says so.
dpkg -r uringfs >"$tmp/dpkg-r.log" 2>&1 && st=0 || st=$?
t_result "$st" "dpkg -r with the mount live"
t_diag <"$tmp/dpkg-r.log"
t_check "it names the mount it leaves" grep -qF "leaving $tmp/mnt mounted" "$tmp/dpkg-r.log"
t_check "the mount still serves" cmp -s "$tmp/expected" "$tmp/mnt/log"
left=()
while IFS= read -r f; do
	# Directories (/lib is a link to one) stay while other packages use them.
	[[ -e $f || -L $f ]] && [[ ! -d $f && $f != /etc/* ]] && left+=("$f")
done <"$tmp/files"
t_check "remove leaves no file but the conffiles (${left[*]:-none})" test ${#left[@]} = 0
t_check "umount MOUNTPOINT" umount "$tmp/mnt"
t_check "the daemon (pid $new) exits" wait_for 60 test ! -d "/proc/$new"

dpkg --purge uringfs >"$tmp/dpkg-p.log" 2>&1 && st=0 || st=$?
t_result "$st" "dpkg --purge"
installed=''
left=()
while IFS= read -r f; do
	[[ -e $f || -L $f ]] && [[ ! -d $f ]] && left+=("$f")
done <"$tmp/files"
t_check "purge leaves no file of the package (${left[*]:-none})" test ${#left[@]} = 0
if [[ -z $etc_before ]]; then
	t_check "nor /etc/uringfs" test ! -e /etc/uringfs
fi
t_check "no uringfs mount is left at MOUNTPOINT" bash -c "! findmnt -M '$tmp/mnt' >/dev/null"
t_done
