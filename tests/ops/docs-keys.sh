#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every key of daemon/config.c's settings table is documented in
# uringfs.conf(5) under its [section] with its true default, and appears
# commented out at that default in config/uringfs.conf.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"
t_need_daemon

page=$srcdir/man/uringfs.conf.5
example=$srcdir/config/uringfs.conf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "[section] key = value" for every key, from the table itself.
print_config() {
	"$daemon" --print-config --config /dev/null "$@" |
		awk '/^\[/ { sec = $1 } / = / { sub(/\t#.*/, ""); print sec, $0 }'
}

# "[section] key" for every .TP/.B entry under a .SS [section] heading.
man_keys() {
	awk '/^\.SH/ { sec = "" } /^\.SS \[/ { sec = $2 }
	     prev == ".TP" && $1 == ".B" && sec != "" { print sec, $2 } { prev = $0 }' "$1" | sort
}

# "key value" for each entry whose text has "default" ending a line,
# followed by the value as the first argument of the next macro line.
man_defaults() {
	awk '/^\.SS \[/ { sec = 1 } /^\.SH/ { sec = 0 }
	     sec && prev == ".TP" && $1 == ".B" { key = $2; want = 0 }
	     want && /^\./ { print key, $2; want = 0 }
	     sec && key != "" && /default$/ { want = 1 }
	     { prev = $0 }' "$1"
}

example_keys() {
	awk '/^\[/ { sec = $1 } /^#[a-z_0-9]+ = / { print sec, substr($1, 2) }' "$1" | sort
}

# compare WHAT EXPECTED ACTUAL: 0 when equal, else the difference as diagnostics.
compare() {
	if diff -u --label "$2" --label "$3" "$2" "$3" >"$tmp/diff"; then
		return 0
	fi
	t_diag <"$tmp/diff"
	return 1
}

print_config >"$tmp/defaults"
awk '{ print $1, $2 }' "$tmp/defaults" | sort >"$tmp/table"
t_check "the daemon prints its settings table" test -s "$tmp/table"

man_keys "$page" >"$tmp/man"
t_check "every key has an entry in uringfs.conf.5 under its section, and no other" \
	compare keys "$tmp/table" "$tmp/man"

# Each documented default must give exactly the built-in value.
documented_defaults_match() {
	local key value status=0
	man_defaults "$page" >"$tmp/documented"
	while read -r key value; do
		if ! print_config --set "$key=$value" | cmp -s - "$tmp/defaults"; then
			echo "# $key: documented default '$value' is not the built-in one"
			status=1
		fi
	done <"$tmp/documented"
	# Every key with a value to show must have its default documented.
	while read -r _ key _ value; do
		if [[ $value != "(none)" ]] && ! grep -q "^$key " "$tmp/documented"; then
			echo "# $key: no default documented"
			status=1
		fi
	done <"$tmp/defaults"
	return "$status"
}
t_check "uringfs.conf.5 gives the built-in default of every key" documented_defaults_match

example_keys "$example" >"$tmp/example"
t_check "config/uringfs.conf lists every key in its section, and no other" \
	compare keys "$tmp/table" "$tmp/example"

# Uncommented, the example must be valid and change nothing but cpus,
# whose default (no pinning) has no value to write.
example_is_defaults() {
	sed 's/^#\([a-z_0-9]* = \)/\1/' "$example" >"$tmp/uncommented.conf"
	"$daemon" --check-config "$tmp/uncommented.conf" >/dev/null &&
		"$daemon" --print-config --config "$tmp/uncommented.conf" |
		awk '/^\[/ { sec = $1 } / = / { sub(/\t#.*/, ""); print sec, $0 }' |
			grep -v '^\[workers\] cpus = ' >"$tmp/example-values" &&
		grep -v '^\[workers\] cpus = ' "$tmp/defaults" >"$tmp/default-values" &&
		compare values "$tmp/default-values" "$tmp/example-values"
}
t_check "config/uringfs.conf, uncommented, sets every key to its default" example_is_defaults

# The check itself must notice a key that loses its entry.
missing_key_is_noticed() {
	local key
	key=$(awk 'NR == 1 { print $2 }' "$tmp/table")
	awk -v key="$key" 'prev == ".TP" && $0 == ".B " key { next } { print; prev = $0 }' \
		"$page" >"$tmp/broken.5"
	man_keys "$tmp/broken.5" >"$tmp/broken"
	! cmp -s "$tmp/table" "$tmp/broken"
}
t_check "a key removed from a copy of the page is noticed" missing_key_is_noticed

t_done
