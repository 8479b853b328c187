#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The man pages render without a single warning from groff or mandoc.
set -euo pipefail
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$(dirname "$0")/lib.sh"

# quiet COMMAND...: succeeds when COMMAND succeeds and prints nothing.
quiet() {
	local out status=0
	out=$("$@" 2>&1) || status=$?
	[[ -n $out ]] && t_diag <<<"$out"
	[[ $status == 0 && -z $out ]]
}

for page in uringfs.8 uringfs.conf.5; do
	file=$srcdir/man/$page
	if command -v groff >/dev/null; then
		# -Tutf8: the terminal width, where a long unbreakable line warns.
		t_check "$page: groff -ww -man" quiet groff -ww -z -man -Tutf8 "$file"
	else
		t_skip "$page: groff -ww -man" "groff is not installed"
	fi
	if command -v mandoc >/dev/null; then
		t_check "$page: mandoc -Tlint" quiet mandoc -Tlint "$file"
	else
		t_skip "$page: mandoc -Tlint" "mandoc is not installed"
	fi
done
t_done
