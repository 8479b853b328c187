#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# make check-valgrind: the mount suite with the daemon under valgrind's
# memcheck (uringfs-valgrind), once per variant: dev, and uring when this
# valgrind can run the io_uring transport (probe.c; not 3.19, see README.md).
# UFS_VALGRIND_VARIANTS overrides the list.  Fails if a case fails or any
# daemon process reported an error or a definite leak.  Results in
# $UFS_BUILDDIR/tests/valgrind/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${UFS_SRCDIR:-$here/../..}
builddir=${UFS_BUILDDIR:-$srcdir}
out=$builddir/tests/valgrind
runner=$srcdir/tests/mount/run.py

if ! command -v valgrind >/dev/null; then
	echo "check-valgrind: valgrind not found (Debian: apt-get install valgrind)" >&2
	exit 1
fi
if [[ ! -x $builddir/daemon/uringfs ]]; then
	echo "check-valgrind: $builddir/daemon/uringfs is not built" >&2
	exit 1
fi
mkdir -p "$out"

# Which blocking calls let the daemon's other threads run under valgrind.
"${CC:-gcc}" -std=gnu11 -O1 -g -o "$out/probe" "$here/probe.c" -luring -lpthread
probe() {
	echo -n "check-valgrind: under $(valgrind --version), "
	timeout -s KILL 60 valgrind -q "$out/probe" "$1"
}

variants=dev
if probe uring; then
	variants='dev uring'
fi
variants=${UFS_VALGRIND_VARIANTS:-$variants}

# 2 ms a lookup under valgrind: 1,000,000 files would take 35 minutes, past
# the case's 10; 50,000 is still more than the 20,000 descriptors it is about.
export UFS_LIMITS_FILES=${UFS_LIMITS_FILES:-50000}

# A SETLKW that waits would stop the whole daemon: skip those cases if the
# runner can, else they time out and break their shared mount.
skip=()
if ! probe ofd; then
	if /usr/bin/python3 "$runner" --help | grep -q -- --skip; then
		skip=(--skip setlkw)
	else
		echo "check-valgrind: run.py has no --skip: the setlkw cases will hang and fail" >&2
	fi
fi

# Three cases assert timing that valgrind's 20-50x slowdown breaks (not memory
# errors): a copy signalled while it runs, and space freed when unlink returns,
# which needs the kernel's asynchronous RELEASE read by a worker before the
# UNLINK is served (the daemon waits up to 500 ms for one another worker holds).
skip+=(--skip interrupt_thread --skip unlink_frees_space --skip unlink_waits_for_a_slow_release)

status=0
for variant in $variants; do
	logs=$out/logs-$variant
	rm -rf "$logs"
	mkdir -p "$logs"
	# The daemon also runs as the test user (t_user): let it write its report.
	chmod 1777 "$logs"
	echo "check-valgrind: variant $variant, TAP in $out/$variant.tap, reports in $logs"
	UFS_DAEMON=$here/uringfs-valgrind UFS_VALGRIND_LOGDIR=$logs \
		UFS_VALGRIND_DAEMON=$builddir/daemon/uringfs UFS_BUILDDIR=$builddir \
		/usr/bin/python3 "$runner" --variant "$variant" "${skip[@]}" |
		tee "$out/$variant.tap" || status=1
	failed=$(grep -c '^not ok' "$out/$variant.tap" || true)
	# With --quiet a report is empty unless valgrind found something.
	reports=$(find "$logs" -name '*.log' -size +0 | sort)
	echo "check-valgrind: $variant: $(grep -c '^ok' "$out/$variant.tap" || true) ok," \
		"$failed not ok, $(find "$logs" -name '*.log' | wc -l) daemon processes," \
		"$(printf '%s' "$reports" | grep -c . || true) with valgrind reports"
	for r in $reports; do
		echo "=== $r"
		cat "$r"
	done
	if ((failed)) || [[ -n $reports ]] || ! grep -q '^1\.\.' "$out/$variant.tap"; then
		status=1
	fi
done
exit $status
