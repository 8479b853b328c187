#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Real programs through the mount beside the same programs on the backing
# file system itself, in one run: the yardstick for metadata.  Every target
# gets its own fresh directory on one tmpfs and runs the workloads below in
# order; the targets take turns round by round, so a slow minute of the
# machine falls on all of them alike.  Prints seconds (median of the rounds)
# and the ratio to native, then each cell's spread.  Root only (tmpfs,
# drop_caches, enable_uring, tracefs).  Not a test: numbers only.
#
#   bench/real-programs.sh [--rounds N] [--baseline PATH] [--passthrough-hp PATH]
#                          [--quick] [--trace] [--targets LIST] [--workloads LIST]
#                          [--gap SECONDS]
#
# Targets (columns), in this order:
#   native  the tmpfs backing directory itself
#   uring   uringfs (UFS_DAEMON, default daemon/uringfs) with its defaults,
#           io_uring required (-o io_uring=on)
#   dev     the same over /dev/fuse (-o io_uring=off)
#   base    --baseline PATH: another uringfs build with io_uring=on and its
#           defaults, e.g. the main branch from before a change
#   alt     uringfs over io_uring with UFS_BENCH_ALT_OPTS added (required
#           for it), e.g. pin_queues=off: two settings side by side in one run
#   hp      --passthrough-hp PATH: libfuse's example/passthrough_hp with its
#           defaults (kernel passthrough, names and attributes cached for a
#           day) plus the arguments in UFS_HP_ARGS (default "-o io_uring",
#           libfuse 3.18's FUSE over io_uring; set it empty for older ones)
# --targets picks some of them (comma list; base and hp need their PATH).
#
# Workloads (rows), in this order, each in the target's fresh directory:
#   untar    tar -xf of /usr/include (a tarball made once, on the tmpfs;
#            UFS_REAL_TREE names another tree, e.g. a small one to try
#            the script out)
#   du       du -s of that tree after sync and drop_caches
#   find     find | xargs stat of that tree, twice, --gap seconds apart
#            (default 3: longer than uringfs's 1 s default timeouts); the
#            second is the warm one
#   clone    git clone --no-hardlinks of this project from a bare clone made
#            once on the tmpfs (outside the mount, like a server)
#   status   git status in that clone, three times --gap seconds apart
#   build    ./configure && make -j$(nproc) of this project (git archive
#            HEAD with autoreconf run once, outside the timing); --quick
#            skips it, it takes minutes over all targets and rounds
#   import   python3 importing every module of a synthetic package tree
#            (2,000 modules in 111 nested packages), twice in fresh
#            interpreters --gap seconds apart: the first writes the .pyc
#            files, the second is the warm one
#   sqlite   python3's sqlite3: 2,000 single-row transactions (journal
#            mode delete, synchronous full: the defaults)
#   rm       rm -rf of everything the workloads left
# --workloads picks some of them (comma list); a workload another one needs
# (untar for du and find, clone for status) still runs, untimed.
#
# --trace counts the FUSE requests of every workload with the kernel's
# events/fuse/fuse_request_send tracepoint (a private tracefs instance,
# filtered by the mount's connection) and prints them per workload and
# opcode for each FUSE target.  FORGET and BATCH_FORGET do not pass that
# tracepoint: for uringfs targets the FORGET column is the daemon's own
# op_forget + op_batch_forget counters from .uringfs.  On a kernel without
# the tracepoint every count comes from those counters (uringfs targets
# only; reading them costs about six requests of its own, the OPEN, READs,
# IOCTL, FLUSH and RELEASE of .uringfs; UFS_REAL_COUNTING=daemon counts
# that way anywhere).  Tracing costs a little time per request, so time a
# run without it.
#
# UFS_BENCH_OPTS adds -o options to every uringfs target (uring, dev, alt, base),
# e.g. entry_timeout=86400,attr_timeout=86400,negative_timeout=86400 for
# long caching.
set -euo pipefail
export LC_ALL=C
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$top/bench/lib.sh"
daemon=${UFS_DAEMON:-$top/daemon/uringfs}
hp_args=${UFS_HP_ARGS--o io_uring}
tree=${UFS_REAL_TREE:-/usr/include}
rounds=5
baseline=
hp=
quick=0
trace=0
gap=3
targets=
workloads=untar,du,find,clone,status,build,import,sqlite,rm
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)

usage() {
	sed -n '/^#   bench/,/^#  *\[--gap/p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while (($#)); do
	case $1 in
	--rounds) rounds=${2:?} && shift ;;
	--baseline) baseline=${2:?} && shift ;;
	--passthrough-hp) hp=${2:?} && shift ;;
	--quick) quick=1 ;;
	--trace) trace=1 ;;
	--targets) targets=${2:?} && shift ;;
	--workloads) workloads=${2:?} && shift ;;
	--gap) gap=${2:?} && shift ;;
	*) usage ;;
	esac
	shift
done
if [[ -z $targets ]]; then
	targets=native,uring,dev${baseline:+,base}${hp:+,hp}
fi
IFS=, read -ra wanted <<<"$targets"
declare -A want_wl=()
for w in ${workloads//,/ }; do
	want_wl[$w]=1
done
((quick)) && unset 'want_wl[build]'
for t in "${wanted[@]}"; do
	case $t in
	native | uring | dev) ;;
	alt) [[ -n ${UFS_BENCH_ALT_OPTS:-} ]] || { echo "alt needs UFS_BENCH_ALT_OPTS" >&2 && exit 2; } ;;
	base) [[ -x $baseline ]] || { echo "base needs --baseline PATH" >&2 && exit 2; } ;;
	hp) [[ -x $hp ]] || { echo "hp needs --passthrough-hp PATH" >&2 && exit 2; } ;;
	*) echo "unknown target $t" >&2 && exit 2 ;;
	esac
done

work=$(mktemp -d /tmp/ufs-real.XXXXXX)
mnt=$work/mnt
assets=$work/tmpfs/assets
results=$work/results
inst=
: >"$results"

cleanup() {
	bench_umount "$mnt"
	if [[ -n $inst && -d $inst ]]; then
		echo 0 >"$inst/events/fuse/fuse_request_send/enable" || true
		rmdir "$inst" || true
	fi
	if mountpoint -q "$work/tmpfs"; then
		umount "$work/tmpfs"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

has() { [[ -n ${want_wl[$1]:-} ]]; }

# --- what every target starts from, made once -------------------------------

bench_tmpfs 16g "$work/tmpfs"
mkdir -p "$assets"
if has untar || has du || has find; then
	tar -C "$(dirname "$tree")" -cf "$assets/include.tar" "$(basename "$tree")"
	nfiles=$(tar -tf "$assets/include.tar" | wc -l)
fi
if has clone || has status; then
	git clone -q --bare "$top" "$assets/project.git"
fi
if has build; then
	mkdir "$assets/src"
	git -C "$top" archive HEAD | tar -C "$assets/src" -xf -
	(cd "$assets/src" && autoreconf -fi >/dev/null 2>&1)
	tar -C "$assets" -cf "$assets/src.tar" src
	rm -rf "$assets/src"
fi
if has import; then
	# 10 packages of 10 packages of 20 modules: 2,000 modules, 111
	# __init__.py, each a few lines that define something, as real ones do.
	"$py" - "$assets/py" <<'EOF'
import os, sys
root = sys.argv[1]
names = []
body = ('import os\n\nCONST = {i}\n\n\nclass Thing{i}:\n'
        '    def value(self):\n        return CONST + len(os.sep)\n')
for a in range(10):
    for b in range(10):
        d = f'{root}/ufsbench/p{a}/q{b}'
        os.makedirs(d)
        for m in range(20):
            with open(f'{d}/m{m}.py', 'w') as f:
                f.write(body.format(i=m))
            names.append(f'ufsbench.p{a}.q{b}.m{m}')
for dirpath, _, _ in os.walk(f'{root}/ufsbench'):
    open(f'{dirpath}/__init__.py', 'w').close()
with open(f'{root}/modules.txt', 'w') as f:
    f.write('\n'.join(names) + '\n')
EOF
fi

# --- tracing ----------------------------------------------------------------

# How requests are counted with --trace: "tracepoint", or "daemon" (the
# uringfs targets' own op_* counters) on a kernel without the tracepoint.
counting=
if ((trace)); then
	tracefs=/sys/kernel/tracing
	if [[ ! -d $tracefs/instances ]]; then
		mount -t tracefs nodev "$tracefs" || true
	fi
	if [[ ${UFS_REAL_COUNTING:-} != daemon && -d $tracefs/events/fuse/fuse_request_send ]]; then
		counting=tracepoint
		inst=$tracefs/instances/ufs-real.$$
		mkdir "$inst"
		# 40 bytes or so an event: room for about 1.6 million per CPU.
		echo 65536 >"$inst/buffer_size_kb"
	else
		counting=daemon
		echo "no events/fuse/fuse_request_send here: counting with the" \
			"daemon's op_* counters (uringfs targets only)" >&2
	fi
fi

# The daemon's op_* counters, "NAME COUNT" a line, NAME without op_ and in
# capitals, FORGET and BATCH_FORGET summed as FORGET.
daemon_ops() {
	awk '$1 ~ /^op_/ { op = toupper(substr($1, 4)); if (op == "BATCH_FORGET") op = "FORGET"
		n[op] += $2 } END { for (op in n) print op, n[op] }' "$mnt/.uringfs" | sort
}

# Start counting the requests of TARGET's mount at $mnt.
count_start() {
	local target=$1 ev=$inst/events/fuse/fuse_request_send
	[[ $target == hp ]] || daemon_ops >"$work/ops.before"
	if [[ $counting == tracepoint ]]; then
		echo "connection == $(bench_kdev "$mnt")" >"$ev/filter"
		: >"$inst/trace"
		echo 1 >"$ev/enable"
	fi
}

# Stop counting and record the requests of TARGET WORKLOAD by opcode.
count_stop() {
	local target=$1 wl=$2 lost
	# RELEASE of the last files and FORGETs come just after the program.
	sleep 0.3
	if [[ $counting == tracepoint ]]; then
		echo 0 >"$inst/events/fuse/fuse_request_send/enable"
		{ grep -o 'opcode [0-9]* ([A-Z_0-9]*)' "$inst/trace" || true; } |
			sed 's/.*(FUSE_\(.*\))/\1/' | sort | uniq -c |
			while read -r count op; do
				echo "req $target $wl $round $op $count"
			done >>"$results"
		lost=$(awk '/^overrun:/ { n += $2 } END { print n + 0 }' "$inst"/per_cpu/cpu*/stats)
		if ((lost)); then
			echo "warning: $target $wl: the trace buffer lost $lost requests" >&2
		fi
	fi
	[[ $target != hp ]] || return 0
	# FORGET does not pass the tracepoint: it comes from the daemon either way.
	daemon_ops | join "$work/ops.before" - |
		while read -r op before after; do
			if [[ $op == FORGET || $counting == daemon ]] && ((after > before)); then
				echo "req $target $wl $round $op $((after - before))"
			fi
		done >>"$results"
}

# --- the workloads ----------------------------------------------------------

# Run WORKLOAD's command for TARGET; time it (and count its requests) if
# WORKLOAD is wanted, else only run it.
step() {
	local target=$1 wl=$2 t0 t1 counted=0
	shift 2
	if ! has "${wl%[0-9]}"; then
		"$@"
		return
	fi
	if [[ -n $counting && $target != native ]] &&
		[[ $counting == tracepoint || $target != hp ]]; then
		counted=1
		count_start "$target"
	fi
	t0=$EPOCHREALTIME
	"$@"
	t1=$EPOCHREALTIME
	((counted == 0)) || count_stop "$target" "$wl"
	awk -v a="$t0" -v b="$t1" -v t="$target" -v w="$wl" -v r="$round" \
		'BEGIN { printf "time %s %s %s %.3f\n", t, w, r, b - a }' | tee -a "$results" >&2
}

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

find_stat() {
	find "$1" -print0 | xargs -0 stat >/dev/null
}

git_status() {
	git -C "$1" status >/dev/null
}

# The output goes to a log beside the mount; its end is shown if it fails.
configure_make() {
	local log=$work/build.log
	if ! (cd "$1" && ./configure -q && make -s -j"$(nproc)") >"$log" 2>&1; then
		tail -20 "$log" >&2
		return 1
	fi
}

# As a user's interpreter does, whatever this shell's environment says.
py_import() {
	env -u PYTHONDONTWRITEBYTECODE "$py" -c 'import importlib, sys
sys.path.insert(0, sys.argv[1])
for name in open(sys.argv[2]).read().split():
    importlib.import_module(name)' "$1" "$assets/py/modules.txt"
}

sqlite_txns() {
	"$py" -c 'import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("create table t (id integer primary key, v text)")
for i in range(2000):
    db.execute("begin")
    db.execute("insert into t (v) values (?)", ("row %d" % i,))
    db.execute("commit")
db.close()' "$1"
}

# All workloads of one target in DIR (the mount or the native directory).
run_target() {
	local target=$1 d=$2/w
	mkdir "$d"
	if has untar || has du || has find; then
		mkdir "$d/untar"
		step "$target" untar tar -C "$d/untar" -xf "$assets/include.tar"
	fi
	if has du; then
		drop_caches
		step "$target" du du -s "$d/untar" >/dev/null
	fi
	if has find; then
		step "$target" find1 find_stat "$d/untar"
		sleep "$gap"
		step "$target" find2 find_stat "$d/untar"
	fi
	if has clone || has status; then
		step "$target" clone git clone -q --no-hardlinks "$assets/project.git" "$d/clone"
	fi
	if has status; then
		step "$target" status1 git_status "$d/clone"
		sleep "$gap"
		step "$target" status2 git_status "$d/clone"
		sleep "$gap"
		step "$target" status3 git_status "$d/clone"
	fi
	if has build; then
		tar -C "$d" -xf "$assets/src.tar"
		step "$target" build configure_make "$d/src"
	fi
	if has import; then
		cp -a "$assets/py" "$d/py"
		step "$target" import1 py_import "$d/py"
		sleep "$gap"
		step "$target" import2 py_import "$d/py"
	fi
	if has sqlite; then
		mkdir "$d/sqlite"
		step "$target" sqlite sqlite_txns "$d/sqlite/bench.db"
	fi
	if has rm; then
		step "$target" rm rm -rf "$d"
	fi
}

mount_target() {
	local target=$1 src=$2
	case $target in
	uring) bench_ufs_mount "$daemon" io_uring=on "$src" "$mnt" ;;
	dev) bench_ufs_mount "$daemon" io_uring=off "$src" "$mnt" ;;
	alt) bench_ufs_mount "$daemon" "io_uring=on,$UFS_BENCH_ALT_OPTS" "$src" "$mnt" ;;
	base) bench_ufs_mount "$baseline" io_uring=on "$src" "$mnt" ;;
	hp)
		mkdir -p "$src" "$mnt"
		# shellcheck disable=SC2086 # the arguments split on purpose
		"$hp" $hp_args "$src" "$mnt"
		;;
	esac
}

echo Y >/sys/module/fuse/parameters/enable_uring
{
	echo "kernel $(uname -r), $(nproc) CPUs, $(date -u '+%F %H:%M') UTC"
	echo "project $(git -C "$top" rev-parse --short HEAD), daemon $daemon"
	[[ -z $baseline ]] || echo "baseline $baseline"
	[[ -z $hp ]] || echo "passthrough_hp $hp $hp_args"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$work/header" >&2
for ((round = 1; round <= rounds; round++)); do
	echo "round $round of $rounds" >&2
	for target in "${wanted[@]}"; do
		src=$work/tmpfs/$target-$round
		mkdir "$src"
		if [[ $target == native ]]; then
			run_target native "$src"
		else
			mount_target "$target" "$src"
			run_target "$target" "$mnt"
			bench_umount "$mnt"
		fi
		rm -rf "$src"
	done
done

# --- the tables -------------------------------------------------------------

echo
cat "$work/header"
"$py" - "$results" "$rounds" "${nfiles:-0}" "$gap" "$tree" "${wanted[@]}" <<'EOF'
import collections, os, statistics, sys

results, rounds, nfiles, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tree, targets = sys.argv[5], sys.argv[6:]
HEAD = {'native': 'native s', 'uring': 'uringfs io_uring', 'dev': 'uringfs /dev/fuse',
        'alt': 'uringfs io_uring, ' + os.environ.get('UFS_BENCH_ALT_OPTS', ''),
        'base': 'baseline', 'hp': 'passthrough_hp'}
ROWS = [
    ('untar', f'untar {tree} ({nfiles:,} entries)'),
    ('du', 'du -s after drop_caches'),
    ('find1', 'find + xargs stat, 1st (just after)'),
    ('find2', f'find + xargs stat, 2nd ({gap} s later)'),
    ('clone', 'git clone of this project'),
    ('status1', 'git status, 1st'),
    ('status2', f'git status, 2nd ({gap} s later)'),
    ('status3', f'git status, 3rd ({gap} s later)'),
    ('build', 'configure + make of this project'),
    ('import1', 'python import, 2,000 modules, 1st (writes .pyc)'),
    ('import2', f'python import, again ({gap} s later)'),
    ('sqlite', 'sqlite3, 2,000 transactions'),
    ('rm', 'rm -rf of it all'),
]
times = collections.defaultdict(list)
reqs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(results):
    f = line.split()
    if f[0] == 'time':
        times[f[1], f[2]].append(float(f[4]))
    elif f[0] == 'req':
        reqs[f[1], f[2]][f[4], f[3]] = int(f[5])
rows = [(k, label) for k, label in ROWS if any((t, k) in times for t in targets)]


def med(v):
    return statistics.median(v)


print(f'\nseconds, median of {rounds} round(s), targets in turn; ratio to native\n')
print('| workload | ' + ' | '.join(HEAD[t] for t in targets) + ' |')
print('|---|' + '---|' * len(targets))
for k, label in rows:
    cells = []
    native = med(times['native', k]) if ('native', k) in times else None
    for t in targets:
        v = times.get((t, k))
        if not v:
            cells.append('-')
            continue
        cell = f'{med(v):.3f}'
        if t != 'native' and native:
            cell += f' ({med(v) / native:.2f}x)'
        cells.append(cell)
    print(f'| {label} | ' + ' | '.join(cells) + ' |')

if rounds > 1:
    print('\nspread: fastest-slowest round, seconds\n')
    print('| workload | ' + ' | '.join(HEAD[t].replace(' s', '') for t in targets) + ' |')
    print('|---|' + '---|' * len(targets))
    for k, label in rows:
        cells = []
        for t in targets:
            v = times.get((t, k))
            cells.append(f'{min(v):.3f}-{max(v):.3f}' if v else '-')
        print(f'| {label} | ' + ' | '.join(cells) + ' |')

for t in targets:
    per_wl = {k: reqs[t, k] for k, _ in rows if (t, k) in reqs}
    if not per_wl:
        continue
    # Each opcode's median over the rounds (a round without it counts 0).
    counts = {k: {op: int(med([c.get((op, str(r)), 0) for r in range(1, rounds + 1)]))
                  for op in {op for op, _ in c}} for k, c in per_wl.items()}
    total = collections.Counter()
    for c in counts.values():
        total.update({op: n for op, n in c.items() if op != 'FORGET'})
    ops = [op for op, n in total.most_common() if n]
    forget = any('FORGET' in c for c in counts.values())
    print(f'\nFUSE requests, {HEAD[t]} (median of the rounds)\n')
    print('| workload | total | ' + ' | '.join(ops) + (' | FORGET* |' if forget else ' |'))
    print('|---|---|' + '---|' * (len(ops) + forget))
    for k, label in rows:
        if k not in counts:
            continue
        c = counts[k]
        cells = [str(sum(n for op, n in c.items() if op != 'FORGET'))]
        cells += [str(c.get(op, 0)) for op in ops]
        if forget:
            cells.append(str(c.get('FORGET', 0)))
        print(f'| {label} | ' + ' | '.join(cells) + ' |')
    if forget:
        print('\n* FORGET: the daemon\'s op_forget + op_batch_forget (not on the tracepoint)')
EOF
