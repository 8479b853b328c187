# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's life cycle and its mount: how it shows in mountinfo, the ways
it ends (fusermount3 -u, umount, SIGTERM, SIGINT) with exit status 0, start-up
failures, and the hidden read-only control file.  These cases need the real
daemon and skip on the bind variant.
"""

import concurrent.futures
import contextlib
import ctypes
import errno
import os
import select
import signal
import stat
import subprocess
import time

import ufs
import ufs_sys as sx
from ufs import case, check, check_eq, check_errno, cpu_list, thread_cpus, tid_name

E = errno


@case(mount=False)
def mount_entry():
    ufs.require_daemon()
    with ufs.Mount() as m:
        entry = ufs.mount_entry(m.mnt)
        check_eq(entry.fstype, ufs.FSTYPE, 'fstype')
        check_eq(entry.source, m.src, 'fsname (mount source)')
        check('default_permissions' in entry.superopts,
              f'default_permissions not on by default: {entry.superopts}')
        check('allow_other' not in entry.superopts, f'allow_other without asking: {entry.superopts}')
    with ufs.Mount(opts='allow_other') as m:
        check('allow_other' in ufs.mount_entry(m.mnt).superopts, 'allow_other missing')


@case(mount=False)
def unmount_right_after_mount():
    """fusermount3 -u as soon as the mount shows in mountinfo, many times:
    nothing the daemon does at start-up may keep the mount busy."""
    ufs.require_daemon()
    for i in range(20):
        with ufs.Mount(opts='allow_other' if i % 2 else None):
            pass


def umount_while_starting(wait_for=None, env=None):
    """Start a daemon and umount(2) its mount the moment it shows in
    mountinfo, or once its log holds wait_for; the daemon must exit 0 by
    itself, logging no error, and say why it went.  Returns its log."""
    m = ufs.Mount(env=env)
    mnt = os.fsencode(m.mnt)
    for d in (m.src, m.mnt):
        os.makedirs(d, exist_ok=True)
    with open('/proc/self/mountinfo', 'rb') as info:
        waker = select.poll()
        waker.register(info, select.POLLPRI)     # mountinfo changed
        m._spawn()
        try:
            deadline = time.monotonic() + ufs.MOUNT_TIMEOUT
            while m.proc.poll() is None and time.monotonic() < deadline:
                info.seek(0)
                shown = b' ' + mnt + b' ' in info.read()
                if shown and (not wait_for or wait_for in m.log_text()):
                    if sx.libc.umount2(mnt, 0) == 0:
                        break
                    check(ctypes.get_errno() == E.EBUSY,
                          f'umount {m.mnt}: {os.strerror(ctypes.get_errno())}')
                elif not shown:
                    waker.poll(50)
                else:
                    time.sleep(0.005)
            m.wait_exit()
        finally:
            m.abort()
    log = m.log_text()
    check('uringfs: error: ' not in log and 'uringfs: warn: ' not in log,
          'the daemon logged an error about an unmount' + m.log_tail())
    check('was unmounted while uringfs started' in log or 'unmounted, exiting' in log,
          'the daemon did not say it was unmounted' + m.log_tail())
    return log


@case(mount=False, root=True, timeout=60)
def umount_races_start():
    """umount(2) the very moment the mount shows in mountinfo, over and over:
    whatever the start-up was doing (reading INIT, registering the ring's
    entries), the daemon exits 0 with an info line saying the mount went
    away (it exited 1 with an error per entry when REGISTER met ENOTCONN)."""
    ufs.require_daemon()
    early = 0
    deadline = time.monotonic() + 20
    for _ in range(25):
        early += 'unmounted while uringfs started' in umount_while_starting()
        if time.monotonic() > deadline:
            break
    ufs.diag(f'{early} unmounts came before the daemon served')


@case(mount=False, root=True)
def umount_during_start_steps():
    """The debug build waits at the start-up's steps (UFS_DEBUG_PAUSE): an
    umount before INIT, and over io_uring one while the ring registers its
    entries, end the daemon with status 0 and an info line saying so."""
    ufs.require_debug_build()
    steps = [('init', None)]
    if ufs.config().expect_transport == 'uring':
        # Logged just before the ring's set-up (transport.c: copy_mode_choose).
        steps.append(('register', 'copy_file_range: '))
    for step, wait_for in steps:
        log = umount_while_starting(wait_for, env={'UFS_DEBUG_PAUSE': f'{step}:1000'})
        check('was unmounted while uringfs started' in log,
              f'an unmount at {step}: the daemon does not say so\n{log}')


def ends_with(how):
    """Start a mount, write a file, end the daemon `how`; exit 0, mount gone."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'before the end')
        if how == 'umount':
            subprocess.run(['umount', m.mnt], check=True)
            m.ended('umount')
        else:
            m.terminate(how)
        check_eq(ufs.read_file(f'{m.src}/f'), b'before the end', 'backing file after the end')


@case(mount=False)
def exit_on_umount():
    ends_with('umount')


@case(mount=False)
def exit_on_sigterm():
    ends_with(signal.SIGTERM)


@case(mount=False)
def exit_on_sigint():
    ends_with(signal.SIGINT)


@case(mount=False)
def sigterm_with_open_file():
    """SIGTERM while a file is open: the daemon must still unmount and exit 0."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        fd = os.open(f'{m.mnt}/f', os.O_CREAT | os.O_RDWR)
        try:
            os.write(fd, b'x')
            m.terminate(signal.SIGTERM)
        finally:
            with contextlib.suppress(OSError):  # the connection may be gone by now
                os.close(fd)


start_fails = ufs.start_fails


@case(mount=False)
def missing_source_fails():
    start_fails(['/nonexistent/uringfs-source'], 'missing source')


@case(mount=False)
def bad_option_fails():
    src = ufs.scratch_dir('src')
    start_fails(['-o', 'no_such_option=1', src], 'unknown option')
    start_fails(['-o', 'io_uring=maybe', src], 'io_uring=maybe')
    one_line_naming(start_fails(['-o', 'strictatime', src], 'strictatime'), ('strictatime',),
                    'strictatime')


def one_line_naming(stderr, words, what):
    """A refusal is one line on stderr (beside info lines), naming every option involved."""
    lines = [line for line in stderr.strip().splitlines() if not line.startswith('uringfs: info:')]
    check_eq(len(lines), 1, f'{what}: lines on stderr ({stderr!r})')
    for word in words:
        check(word in lines[0], f'{what}: {word} not named in {lines[0]!r}')


@case(mount=False)
def unsafe_combinations_refused():
    """Settings that would give users more through the mount than natively,
    or let a lock wait abort the mount, are refused before mounting."""
    src = ufs.scratch_dir('src')
    for opts, words in (('allow_other,default_permissions=off',
                         ('allow_other', 'default_permissions=off')),
                        ('request_timeout=15,posix_locks=on', ('request_timeout=15', 'posix_locks')),
                        ('request_timeout=20,flock_locks=on', ('request_timeout=20', 'flock_locks'))):
        one_line_naming(start_fails(['-o', opts, src], opts), words, opts)


@case(mount=False)
def unenforced_acls_refused():
    """Other users (allow_other) are not let in unless the kernel enforces
    POSIX ACLs: whether SOURCE keeps any, or a file system mounted below it
    later will, cannot be known at start-up."""
    src = ufs.scratch_dir('src')
    for opts, why in (('allow_other,posix_acl=off', 'posix_acl=off'),
                      ('allow_other,xattr=off', 'xattr=off')):
        one_line_naming(start_fails(['-o', opts, src], opts), ('allow_other', why, 'ACL'), opts)


@case
def control_file(m):
    ufs.require_daemon('the control file is the daemon\'s')
    stats = m.stats()
    if stats is None:
        raise ufs.Skip(f'no {ufs.CONTROL} control file yet')
    path = f'{m.mnt}/{ufs.CONTROL}'
    check('transport' in stats, f'no transport line in {stats}')
    check(ufs.CONTROL not in os.listdir(m.mnt), f'{ufs.CONTROL} is listed by readdir')
    check(not os.path.exists(f'{m.src}/{ufs.CONTROL}'), 'control file created in the source')
    check_errno((E.EACCES, E.EPERM, E.EROFS), os.open, path, os.O_WRONLY)
    check_errno((E.EACCES, E.EPERM, E.EROFS), os.unlink, path)
    check_errno((E.EACCES, E.EPERM, E.EROFS, E.EEXIST), os.mkdir, path)
    # The latency_* lines come with each opcode's first request (these, say).
    def fixed(names):
        return {name for name in names if not name.startswith('latency_')}

    check_eq(fixed(m.stats()), fixed(stats), 'stats names on a second read')


@case(mount=False)
def control_file_statx():
    """statx of the control file answers, and STATX stays on for the mount."""
    ufs.require_daemon('the control file is the daemon\'s')
    with ufs.Mount(opts='attr_timeout=0,entry_timeout=0') as m:
        for name in ('a', 'b'):
            ufs.write_file(f'{m.src}/{name}', b'x')
        if not sx.statx(f'{m.src}/a')['mask'] & sx.STATX_BTIME:
            raise ufs.Skip('the backing file system has no birth times')
        check(sx.statx(f'{m.mnt}/a')['mask'] & sx.STATX_BTIME, 'no btime before')
        got = sx.statx(f'{m.mnt}/{ufs.CONTROL}')
        check(stat.S_ISREG(got['mode']), f'control file mode {got["mode"]:o}')
        # An ENOSYS reply to STATX turns it off for the whole connection.
        check(sx.statx(f'{m.mnt}/b')['mask'] & sx.STATX_BTIME,
              'no btime after a statx of the control file: STATX was turned off')


def connection_dir(mnt):
    """/sys/fs/fuse/connections/N of the mount at mnt, mounting fusectl if needed."""
    conns = '/sys/fs/fuse/connections'
    if not os.path.ismount(conns):
        r = subprocess.run(['mount', '-t', 'fusectl', 'none', conns], capture_output=True)
        if r.returncode:
            raise ufs.Skip(f'cannot mount fusectl on {conns}: {r.stderr.decode().strip()}')
    return f'{conns}/{os.minor(os.stat(mnt).st_dev)}'


@case(mount=False, root=True)
def abort_ends_daemon():
    """An abort through fusectl ends the daemon within 5 s: it logs the abort
    at error level, detaches the dead mount and exits 1."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'x')
        with open(f'{connection_dir(m.mnt)}/abort', 'w') as f:
            f.write('1')
        m.aborted(timeout=5)


@case(mount=False)
def kill9_leaves_enotconn():
    """kill -9: the mount answers ENOTCONN and fusermount3 -u removes it."""
    ufs.require_daemon()
    m = ufs.Mount()
    with contextlib.ExitStack() as stack:
        stack.callback(m.abort)
        m.start()
        ufs.write_file(f'{m.mnt}/f', b'x')
        m.proc.kill()
        m.proc.wait(5)
        # A request caught in the ring's teardown may end ECONNABORTED; after it, ENOTCONN.
        # The connection ends only once io_uring's exit work lets go of the
        # rings' references to /dev/fuse; under load and ASan that took over
        # 5 s (fresh-root run of a03a626), every request meanwhile ECONNABORTED.
        # The fresh-root run of a396a42 saw it last over 30 s with the ASan
        # daemon: then the dead mount must still refuse every call and go
        # away with fusermount3 -u.
        deadline = time.monotonic() + 30
        while ufs.outcome(os.stat, f'{m.mnt}/f').err == E.ECONNABORTED and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        if ufs.outcome(os.stat, f'{m.mnt}/f').err == E.ECONNABORTED:
            print('# still ECONNABORTED 30 s after kill -9 (io_uring exit work)')
        else:
            check_errno(E.ENOTCONN, os.stat, f'{m.mnt}/f')
        subprocess.run(['fusermount3', '-u', m.mnt], check=True, capture_output=True)
        check(ufs.mount_entry(m.mnt) is None, 'the dead mount is still listed')
        m.mounted = False


@case(mount=False, timeout=90)
def sigterm_under_write_load():
    """SIGTERM while fio writes through the mount: the daemon exits 0 within 10 s."""
    ufs.require_daemon()
    fio = shutil_which('fio')
    with ufs.Mount() as m:
        cmd = [fio, '--name=load', f'--directory={m.mnt}', '--rw=randwrite', '--bs=128k',
               '--size=64m', '--numjobs=2', '--iodepth=4', '--ioengine=psync',
               '--time_based', '--runtime=30', '--output=/dev/null']
        out = os.path.join(m.tmp, 'fio')
        with open(f'{out}.err', 'wb') as err:
            load = subprocess.Popen(cmd[:-1] + [f'--output={out}.out'],
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            time.sleep(1.5)
            if load.poll() is not None:
                said = ''
                for name in (f'{out}.err', f'{out}.out'):
                    with contextlib.suppress(OSError), open(name, errors='replace') as f:
                        said += f.read()[-1500:]
                raise AssertionError(f'fio ended before the signal (status {load.returncode}): '
                                     f'{said}')
            start = time.monotonic()
            m.proc.send_signal(signal.SIGTERM)
            m.ended('SIGTERM under load')
            took = time.monotonic() - start
            check(took < 10, f'the daemon took {took:.1f} s to exit')
        finally:
            load.kill()
            load.wait()


def shutil_which(name):
    import shutil
    path = shutil.which(name)
    if not path:
        raise ufs.Skip(f'{name} is not installed')
    return path


@case(mount=False)
def cpus_pin_workers():
    """cpus=0 pins every worker to CPU 0 (and io-wq with it, IOWQ_AFF)."""
    ufs.require_daemon()
    with ufs.Mount(opts='cpus=0') as m:
        ufs.write_file(f'{m.mnt}/f', b'pinned')
        stats = m.stats()
        prefix = 'uringfs-ring' if stats['transport'] == 'uring' else 'uringfs-dev'
        pinned = thread_cpus(m.pid, prefix)
        check(pinned, f'no {prefix}* threads in {m.pid}')
        check_eq(set(pinned.values()), {'0'}, 'worker CPU affinity')
        check('IOWQ_AFF' not in m.log_text(), 'IORING_REGISTER_IOWQ_AFF failed' + m.log_tail())


def require_ring_variant():
    """For cases that set the worker layout themselves (variant=False)."""
    if ufs.config().expect_transport == 'dev':
        raise ufs.Skip('a /dev/fuse variant')


@case(mount=False)
def ring_workers_follow_their_queues():
    """Each io_uring worker runs on the CPUs of the queues it serves (pin_queues=on)."""
    ufs.require_daemon()
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        raise ufs.Skip('one usable CPU: nothing to tell apart')
    with open('/sys/devices/system/cpu/possible') as f:
        possible = cpu_list(f.read().strip())
    require_ring_variant()
    for opts, pinned in (('workers=2', True), ('workers=2,pin_queues=off', False)):
        with ufs.Mount(opts=opts, variant=False) as m:
            ufs.write_file(f'{m.mnt}/f', b'queues')
            if m.stats()['transport'] != 'uring':
                raise ufs.Skip('not served over io_uring')
            # FSYNC always goes to io-wq; a copy starts the copy helper (thread mode).
            with open(f'{m.mnt}/f', 'r+b') as f:
                os.fsync(f.fileno())
                with open(f'{m.mnt}/g', 'wb') as g:
                    os.copy_file_range(f.fileno(), g.fileno(), 6)
            iowq = thread_cpus(m.pid, 'iou-wrk')
            check(iowq, 'no io-wq thread')
            copiers = thread_cpus(m.pid, 'uringfs-copy')
            check(copiers, 'no copy helper thread')
            for name, cpus in copiers.items():
                # A long copy must not share its worker's one CPU.
                check_eq(cpu_list(cpus), allowed, f'{name} CPUs ({opts})')
            found = thread_cpus(m.pid, 'uringfs-ring')
            check_eq(len(found), 2, f'ring worker threads ({opts})')
            for name, cpus in found.items():
                wid = int(name[len('uringfs-ring'):])
                # Queues are dealt round robin: worker i serves qid i, i+W, ...
                mine = {q for q in possible if q % 2 == wid} & allowed
                want = mine if pinned and mine else allowed
                check_eq(cpu_list(cpus), want, f'{name} CPUs ({opts})')
            # io-wq threads, named after the ring's task, follow their worker.
            workers = {tid_name(m.pid, tid): cpus for tid, cpus in
                       ((n[len('iou-wrk-'):], c) for n, c in iowq.items())}
            for name, cpus in workers.items():
                check(name in found, f'io-wq of {name}, not of a ring worker ({opts})')
                check_eq(cpu_list(cpus), cpu_list(found[name]), f'io-wq CPUs of {name} ({opts})')


@case(mount=False)
def more_workers_than_queues():
    """Workers beyond the queues share them, as long as each gets an entry."""
    ufs.require_daemon()
    with open('/sys/devices/system/cpu/possible') as f:
        queues = len(cpu_list(f.read().strip()))
    # queue_depth 2: at most two workers per queue can have an entry.
    require_ring_variant()
    with ufs.Mount(opts=f'workers={2 * queues + 1},queue_depth=2', variant=False) as m:
        stats = m.stats()
        if stats['transport'] != 'uring':
            raise ufs.Skip('not served over io_uring')
        check_eq(stats['workers'], 2 * queues, 'workers started')
        check_eq(len(thread_cpus(m.pid, 'uringfs-ring')), 2 * queues, 'ring worker threads')
        data = ufs.pattern(8 << 20)
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: ufs.write_file(f'{m.mnt}/f{i}', data), range(4)))
        for i in range(4):
            check_eq(ufs.read_file(f'{m.src}/f{i}'), data, f'f{i} in the backing directory')
            check_eq(ufs.read_file(f'{m.mnt}/f{i}'), data, f'f{i} read back')


@case(mount=False)
def requests_take_the_transport():
    """The counters show which transport served: every data request on it."""
    ufs.require_daemon()
    want = ufs.config().expect_transport
    if not want:
        raise ufs.Skip('no transport expected by this variant')
    with ufs.Mount() as m:
        before = m.stats()
        data = ufs.pattern(3 << 20)
        ufs.write_file(f'{m.mnt}/f', data)
        check_eq(ufs.read_file(f'{m.mnt}/f'), data, 'data read back')
        after = m.stats()
        served = {t: after[f'requests_{t}'] - before[f'requests_{t}'] for t in ('ring', 'dev')}
        other = 'dev' if want == 'uring' else 'ring'
        mine = 'ring' if want == 'uring' else 'dev'
        check(served[mine] >= 6, f'only {served[mine]} requests via {mine}: {served}')
        # FORGET and INTERRUPT always use /dev/fuse; nothing else may.
        check(served[other] <= 2 if other == 'dev' else served[other] == 0,
              f'{served[other]} requests via {other}: {served}')
        # Passed-through writes are the kernel's own, on the backing file.
        if after['opens_passthrough'] == before['opens_passthrough']:
            check(after['write_bytes'] - before['write_bytes'] >= len(data), 'write_bytes')


def daemon_pids(mnt):
    """Pids of uringfs processes whose command line names mnt."""
    pids = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f:
                args = f.read().split(b'\0')
        except OSError:
            continue
        if any(os.path.basename(a).startswith(b'uringfs') for a in args) and mnt.encode() in args:
            pids.append(int(pid))
    return pids


@case(mount=False)
def detached_daemon():
    """Without -f the daemon returns once the mount serves, and its detached
    process serves everything until the unmount, then exits.  It says
    nothing on stderr (its start-up lines go to syslog): what it chose is
    in --stats."""
    ufs.require_daemon()
    src, mnt = ufs.scratch_dir('dsrc'), ufs.scratch_dir('dmnt')
    opts = ufs.config().opts
    r = subprocess.run([ufs.config().daemon] + (['-o', opts] if opts else []) + [src, mnt],
                       capture_output=True, text=True, timeout=30)
    check_eq(r.returncode, 0, f'foreground part exit status (stderr: {r.stderr})')
    try:
        check(ufs.mount_entry(mnt) is not None, 'not mounted when the command returned')
        check_eq(r.stderr, '', 'stderr of a start that works')
        st = subprocess.run([ufs.config().daemon, '--stats', mnt], capture_output=True, text=True,
                            timeout=30)
        stats = dict(line.split(' ', 1) for line in st.stdout.splitlines() if ' ' in line)
        for key in ('transport', 'workers', 'queue_mode', 'zero_copy', 'passthrough', 'cfr_mode',
                    'cfr_reason', 'cache', 'protocol', 'max_write', 'version', 'config',
                    'transport_reason'):
            check(key in stats, f'--stats has no {key}: {st.stdout[:300]!r} {st.stderr!r}')
        pids = daemon_pids(mnt)
        check_eq(len(pids), 1, f'detached daemons for {mnt}')
        ufs.write_file(f'{mnt}/f', b'detached')
        check_eq(ufs.read_file(f'{mnt}/f'), b'detached', 'read back through the mount')
        os.rename(f'{mnt}/f', f'{mnt}/g')
        check_eq(sorted(os.listdir(mnt)), ['g'], 'listing')
        subprocess.run(['fusermount3', '-u', mnt], check=True, capture_output=True)
        deadline = time.monotonic() + 10
        while daemon_pids(mnt) and time.monotonic() < deadline:
            time.sleep(0.05)
        check(not daemon_pids(mnt), 'the detached daemon did not exit after the unmount')
    finally:
        if ufs.mount_entry(mnt):
            subprocess.run(['fusermount3', '-u', '-z', mnt])
        for pid in daemon_pids(mnt):
            os.kill(pid, signal.SIGKILL)


@case(mount=False)
def sigusr1_logs_counters():
    """SIGUSR1 writes the counters to the log and the mount serves on."""
    ufs.require_daemon()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'counted')
        os.kill(m.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while 'op_write' not in m.log_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        log = m.log_text()
        check('op_write' in log and 'transport' in log,
              'SIGUSR1 did not log the counters' + m.log_tail())
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'counted', 'read after SIGUSR1')


# -- io_uring that cannot be set up


def uring_enabled():
    try:
        with open('/sys/module/fuse/parameters/enable_uring') as f:
            return f.read().strip() == 'Y'
    except OSError:
        return False


def ringfail_env(mode):
    """Environment that preloads tests/mount/shim/ringfail.c: see its comment."""
    return ufs.preload_env('shim/ringfail.c', UFS_RINGFAIL=mode)


@case(mount=False)
def ring_setup_failure_serves_dev():
    """io_uring=auto: when the workers' rings cannot be created after INIT
    asked for io_uring, the kernel is handed back /dev/fuse, the log says so
    and every request is served there."""
    ufs.require_daemon()
    if not uring_enabled():
        raise ufs.Skip('FUSE-over-io_uring is off (enable_uring=N)')
    with ufs.Mount(opts='io_uring=auto', env=ringfail_env('workers'),
                   variant=False) as m:
        stats = m.stats()
        check_eq(stats['transport'], 'dev', 'transport after a failed ring set-up')
        check('setup-failed' in m.log_text(), 'the log does not say why' + m.log_tail())
        data = ufs.pattern(3 << 20)
        ufs.write_file(f'{m.mnt}/f', data)
        check_eq(ufs.read_file(f'{m.mnt}/f'), data, 'data over the fallback')
        check_eq(m.stats()['requests_ring'], 0, 'requests over the ring')


@case(mount=False)
def no_io_uring_serves_dev():
    """io_uring=auto where io_uring cannot be used at all (enable_uring=N, or
    io_uring_setup refused): /dev/fuse, with the reason in the log."""
    ufs.require_daemon()
    env = None if not uring_enabled() else ringfail_env('all')
    with ufs.Mount(opts='io_uring=auto', env=env, variant=False) as m:
        check_eq(m.stats()['transport'], 'dev', 'transport')
        check('io_uring=off:' in m.log_text(), 'the log does not say why' + m.log_tail())
        ufs.write_file(f'{m.mnt}/f', b'dev')
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'dev', 'data over /dev/fuse')


@case(mount=False)
def io_uring_on_without_io_uring_fails():
    """io_uring=on is a promise: where the ring cannot be had (enable_uring=N,
    io_uring_setup refused, worker rings failing) the daemon exits with one
    line naming the reason and leaves no mount behind."""
    src = ufs.scratch_dir('src')
    cases = [('all', None)] if not uring_enabled() else [('all', 'all'), ('workers', 'workers')]
    for what, mode in cases:
        env = ringfail_env(mode) if mode else None
        err = start_fails(['-o', 'io_uring=on', src], f'io_uring=on ({what})', env=env)
        check('io_uring' in err, f'io_uring=on ({what}): the error does not name io_uring: {err}')
