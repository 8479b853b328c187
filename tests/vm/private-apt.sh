# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# pa_mirror and pa_error are results for the sourcing script:
# shellcheck disable=SC2034
#
# private-apt.sh - apt with a configuration of its own, for Debian experimental
#
# Sourced by tests/vm/fetch-kernel.sh (the 7.3 kernel), tests/kernel/
# build-kernel.sh (the 7.3 source) and scripts/fresh-root-check (the mirror
# of a fresh chroot). Nothing here changes the system: the sources, lists,
# archives and an empty dpkg status all live in a directory of the caller,
# and apt reads that configuration through APT_CONFIG.
#
#   pa_find_mirror              the machine's Debian mirror URI, in $pa_mirror
#   pa_setup DIR SUITE [ARCH]   write a private configuration into DIR
#   pa_update                   update its package lists
#   pa_apt TOOL ARGS...         run apt-get or apt-cache with it
#   pa_log_error LOG            the first error line apt wrote to LOG
#
# The functions return non-zero on failure with the cause, as apt gave it,
# in $pa_error; the caller decides whether that is a skip or a failure.

pa_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
pa_dir=
pa_mirror=
pa_error=

# Print the URIs of a deb822 .sources file whose stanza carries binary
# packages for a plain release (not -security, -updates or -backports).
pa_mirrors_from_deb822() {
	awk -v RS= -F '\n' '
		{
			types = ""; suites = ""; uris = ""; enabled = "yes"
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^#/)
					continue
				split($i, kv, ":[ \t]*")
				key = tolower(kv[1])
				val = substr($i, length(kv[1]) + 2)
				sub(/^[ \t]+/, "", val)
				if (key == "types") types = val
				else if (key == "suites") suites = val
				else if (key == "uris") uris = val
				else if (key == "enabled") enabled = tolower(val)
			}
			if (enabled == "no" || (" " types " ") !~ / deb /)
				next
			n = split(suites, s, /[ \t]+/)
			for (i = 1; i <= n; i++)
				if (s[i] != "" && s[i] !~ /-/) {
					split(uris, u, /[ \t]+/)
					print u[1]
					break
				}
		}' "$1"
}

# Same for one-line "deb [options] URI SUITE COMPONENTS..." files.
pa_mirrors_from_one_line_list() {
	awk '
		$1 != "deb" { next }
		{
			i = 2
			if ($i ~ /^\[/)
				while ($i !~ /\]$/ && i < NF)
					i++
			if ($i ~ /^\[/ || $i ~ /\]$/)
				i++
			if ($(i + 1) !~ /-/)
				print $i
		}' "$1"
}

# The machine's own Debian mirror, so that no host name lives in the
# repository and CI uses whatever mirror or proxy it is configured for.
# $UFS_VM_MIRROR overrides it (e.g. on a non-Debian CI host). A cdrom: or
# file: source cannot serve experimental and is passed over.
pa_find_mirror() {
	local f

	pa_mirror=${UFS_VM_MIRROR:-}
	[[ -z "$pa_mirror" ]] || return 0
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -r "$f" ]] || continue
		pa_mirror=$(pa_mirrors_from_deb822 "$f" | grep -Ev '^(cdrom|file):' | head -n 1 || true)
		[[ -z "$pa_mirror" ]] || return 0
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -r "$f" ]] || continue
		pa_mirror=$(pa_mirrors_from_one_line_list "$f" | grep -Ev '^(cdrom|file):' | head -n 1 || true)
		[[ -z "$pa_mirror" ]] || return 0
	done
	pa_error="no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d (set UFS_VM_MIRROR)"
	return 1
}

# The first line of LOG that says what went wrong: apt's "E:" lines, else
# "Err:" or "W:", else the last line.
pa_log_error() {
	local log=$1 line

	line=$(grep -m 1 '^E: ' "$log" ||
		grep -m 1 -E '^(Err:|W: )' "$log" ||
		tail -n 1 "$log")
	echo "${line:-nothing in $log}"
}

# pa_setup DIR SUITE [ARCH]: a private apt configuration in DIR for SUITE of
# the machine's mirror (main only), for ARCH (default amd64, the guest's).
#
# Acquire::Check-Valid-Until "false": a snapshot mirror, or one that has not
# synced for a while, serves an InRelease past its Valid-Until, and apt then
# refuses the whole suite as expired. That field only guards against being
# served an old index; the signature is still checked against the archive
# keyring (signed-by below), so what we download is still what Debian
# signed. For a test kernel an old index is fine; an unverified one is not.
#
# APT::Update::Error-Mode "any": any failed index fails the update, so that
# a half-updated list never leads to a confusing failure further on.
pa_setup() {
	local dir=$1 suite=$2 arch=${3:-amd64}

	[[ -r "$pa_keyring" ]] || {
		pa_error="$pa_keyring missing (install debian-archive-keyring)"
		return 1
	}
	pa_find_mirror || return 1
	pa_dir=$dir
	mkdir -p "$dir/lists/partial" "$dir/archives/partial"
	: > "$dir/status"
	echo "deb [signed-by=$pa_keyring] $pa_mirror $suite main" > "$dir/sources.list"
	cat > "$dir/apt.conf" <<-EOF
		Dir::Etc::SourceList "$dir/sources.list";
		Dir::Etc::SourceParts "/dev/null";
		Dir::Etc::Preferences "/dev/null";
		Dir::Etc::PreferencesParts "/dev/null";
		Dir::State::Lists "$dir/lists";
		Dir::State::status "$dir/status";
		Dir::Cache::Archives "$dir/archives";
		Dir::Cache::pkgcache "$dir/pkgcache.bin";
		Dir::Cache::srcpkgcache "$dir/srcpkgcache.bin";
		APT::Architecture "$arch";
		APT::Architectures { "$arch"; };
		Acquire::Languages "none";
		Acquire::Check-Valid-Until "false";
		APT::Update::Error-Mode "any";
	EOF
}

pa_apt() {
	local tool=$1
	shift
	APT_CONFIG="$pa_dir/apt.conf" "$tool" -q "$@"
}

# An index past its Valid-Until is used (see pa_setup), but not silently.
pa_note_expired() {
	local f until

	for f in "$pa_dir"/lists/*InRelease; do
		[[ -f "$f" ]] || continue
		until=$(sed -n 's/^Valid-Until: //p' "$f" | head -n 1)
		[[ -n "$until" ]] || continue
		if (($(date -d "$until" +%s 2> /dev/null || echo 0) < $(date +%s))); then
			echo "private-apt: note: $(basename "$f") expired on $until" \
				"(a stale or snapshot mirror); its signature was checked" >&2
		fi
	done
}

# Update the lists; the log stays in DIR/update.log.
pa_update() {
	local mirror

	mirror=$(awk '{ print $3 }' "$pa_dir/sources.list")
	if ! pa_apt apt-get update > "$pa_dir/update.log" 2>&1; then
		pa_error="apt-get update from $mirror failed: $(pa_log_error "$pa_dir/update.log") (log: $pa_dir/update.log)"
		return 1
	fi
	pa_note_expired
}
