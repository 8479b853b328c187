#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the libFuzzer harnesses (see README.md).
#
#   fuzz.sh run NAME       fuzz NAME for $FUZZ_SECONDS (600) into work/NAME
#   fuzz.sh merge NAME...  fold work/NAME into the committed corpus (-merge=1)
#   fuzz.sh check          TAP for make check: build, then per harness the
#                          regressions, the corpus and $FUZZ_CHECK_SECONDS (30)
#                          of fuzzing
#
# UFS_SRCDIR and UFS_BUILDDIR default to the tree this script is in;
# FUZZ_DAEMON=DIR builds the harnesses against another copy of daemon/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
srcdir=${UFS_SRCDIR:-$here/../..}
builddir=${UFS_BUILDDIR:-$srcdir}
fuzzsrc=$srcdir/tests/fuzz
fuzzbuild=$builddir/tests/fuzz
names=(fuzz-decode fuzz-config fuzz-mountopts fuzz-init)
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# libFuzzer options of one harness: input size and dictionary.
options() {
	local name=$1 max_len
	case $name in
	fuzz-decode) max_len=2048 ;;
	fuzz-config) max_len=4096 ;;
	fuzz-mountopts) max_len=8192 ;;	# past the PATH_MAX + 64 word limit
	fuzz-init) max_len=128 ;;
	*)
		echo "fuzz.sh: unknown harness $name" >&2
		return 1
		;;
	esac
	echo "-max_len=$max_len"
	echo "-timeout=10"
	if [[ -f $fuzzsrc/dict/$name.dict ]]; then
		echo "-dict=$fuzzsrc/dict/$name.dict"
	fi
}

run() {
	local name=$1 opts
	mapfile -t opts < <(options "$name")
	mkdir -p "$fuzzbuild/work/$name" "$fuzzbuild/crashes"
	echo "fuzz.sh: $name for ${FUZZ_SECONDS:-600} s; new inputs in $fuzzbuild/work/$name"
	"$fuzzbuild/$name" "${opts[@]}" -max_total_time="${FUZZ_SECONDS:-600}" \
		-print_final_stats=1 -artifact_prefix="$fuzzbuild/crashes/$name-" \
		"$fuzzbuild/work/$name" "$fuzzsrc/corpus/$name"
}

merge() {
	local name opts
	for name in "$@"; do
		mapfile -t opts < <(options "$name")
		mkdir -p "$fuzzbuild/work/$name" "$fuzzsrc/corpus/$name"
		"$fuzzbuild/$name" "${opts[@]}" -merge=1 "$fuzzsrc/corpus/$name" \
			"$fuzzbuild/work/$name"
	done
}

# ---- check: TAP ----

n=0
tmp=
tap() {	# tap OK|FAIL NAME [LOG]
	n=$((n + 1))
	if [[ $1 == OK ]]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		if [[ -n ${3:-} ]]; then
			grep -E 'INVARIANT|ERROR|SUMMARY|runtime error|Test unit written|^==' "$3" |
				head -n 30 | sed 's/^/# /' || true
			echo "# full log: $3"
		fi
	fi
}

check_skip() {
	echo "1..0 # SKIP $1"
	exit 0
}

check() {
	local cc=${FUZZ_CC:-clang} logs name opts files secs=${FUZZ_CHECK_SECONDS:-30}

	command -v "$cc" >/dev/null || check_skip "$cc not found (Debian: apt-get install clang)"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n);\n%s\n' \
		'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return d && n; }' \
		>"$tmp/probe.c"
	"$cc" -fsanitize=fuzzer,address,undefined -o "$tmp/probe" "$tmp/probe.c" \
		>"$tmp/probe.log" 2>&1 ||
		check_skip "$cc cannot link -fsanitize=fuzzer,address,undefined (Debian: apt-get install libclang-rt-14-dev)"

	echo "1..$((1 + 3 * ${#names[@]}))"
	logs=$fuzzbuild/logs
	mkdir -p "$logs"
	# FUZZ_DAEMON=DIR from the environment: test a copy of daemon/ with a fix.
	if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$builddir" FUZZ_CC="$cc" \
		${FUZZ_DAEMON:+FUZZ_DAEMON="$FUZZ_DAEMON"} fuzz-build >"$logs/build.log" 2>&1; then
		tap OK "build the harnesses with $cc"
	else
		tap FAIL "build the harnesses with $cc"
		sed 's/^/# /' "$logs/build.log" | tail -n 30
		echo "Bail out! the fuzz harnesses do not build"
		exit 1
	fi

	for name in "${names[@]}"; do
		mapfile -t opts < <(options "$name")

		# Every reproducer of a bug found earlier, one run each.
		files=()
		if [[ -d $fuzzsrc/regressions/$name ]]; then
			mapfile -t files < <(find "$fuzzsrc/regressions/$name" -type f | sort)
		fi
		if ((${#files[@]} == 0)); then
			tap OK "$name: regressions # SKIP none yet"
		elif "$fuzzbuild/$name" -artifact_prefix="$tmp/" "${files[@]}" \
			>"$logs/$name-regressions.log" 2>&1; then
			tap OK "$name: ${#files[@]} regressions"
		else
			tap FAIL "$name: regressions" "$logs/$name-regressions.log"
		fi

		# The committed corpus, each input once.
		if "$fuzzbuild/$name" "${opts[@]}" -runs=0 -artifact_prefix="$tmp/" \
			"$fuzzsrc/corpus/$name" \
			>"$logs/$name-corpus.log" 2>&1; then
			tap OK "$name: corpus of $(find "$fuzzsrc/corpus/$name" -type f | wc -l) inputs"
		else
			tap FAIL "$name: corpus" "$logs/$name-corpus.log"
		fi

		# A short run from the corpus; new inputs go to a scratch directory.
		mkdir -p "$tmp/$name" "$fuzzbuild/crashes"
		if timeout $((secs + 120)) "$fuzzbuild/$name" "${opts[@]}" \
			-max_total_time="$secs" -print_final_stats=1 \
			-artifact_prefix="$fuzzbuild/crashes/$name-" \
			"$tmp/$name" "$fuzzsrc/corpus/$name" >"$logs/$name-fuzz.log" 2>&1; then
			tap OK "$name: $secs s of fuzzing"
			sed -n 's/^stat::\(number_of_executed_units\|average_exec_per_sec\): */# \1 /p' \
				"$logs/$name-fuzz.log"
		else
			tap FAIL "$name: $secs s of fuzzing" "$logs/$name-fuzz.log"
		fi
	done
}

case ${1:-} in
run) run "$2" ;;
merge)
	shift
	merge "$@"
	;;
check) check ;;
*)
	echo "usage: fuzz.sh run NAME | merge NAME... | check" >&2
	exit 2
	;;
esac
