# SPDX-License-Identifier: GPL-2.0-or-later
"""The mount and its open files outlive the daemon (handover.h).

Three ways a daemon is replaced under load (fio verifying what it wrote
to several open files, a loop creating, renaming and removing files, a
process holding a POSIX lock and another an flock):
- a planned upgrade: `uringfs --take-over MOUNTPOINT` from a new binary;
- kill -9, with systemd's part played by tests/lib/fake_systemd.py: the
  connection and the hand-over record wait in its file descriptor store,
  and a restart finds them (LISTEN_FDS);
- a successor that cannot start (settings the live connection cannot
  have): the mount stays, callers wait, the log and --stats say why, and a
  good start then takes over.
No process may see an error, fio's verification must pass, and both locks
must still be held when the new daemon serves.
"""

import errno
import fcntl
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import fake_systemd
import ufs
import ufs_load
import ufs_sys as sx
from ufs import case, check, check_eq, check_errno

LOAD_SECONDS = 8


def require_handover():
    ufs.require_daemon('hand-over is the daemon\'s')


def check_load(res, what, blocked_max=None, allowed=()):
    """What the load saw across the hand-over: no error anywhere, but the
    errnos allowed (the kernel's, named where a case allows one)."""
    check_eq(res['fio_verify_errors'], 0, f'{what}: fio verification errors\n{res["fio_tail"]}')
    check(set(res['fio_errnos']) <= set(allowed) and (res['fio_rc'] == 0 or res['fio_errnos']),
          f'{what}: fio exit status {res["fio_rc"]}, errors {res["fio_errnos"]}\n{res["fio_tail"]}')
    check(set(res['meta_errnos']) <= set(allowed) and (res['meta_rc'] == 0 or res['meta_errnos']),
          f'{what}: the metadata loop saw errors:\n{res["meta"]}')
    check_eq(res['holders_rc'], [0, 0], f'{what}: the lock holders')
    if blocked_max is not None:
        check(res['meta_worst'] is not None and res['meta_worst'] < blocked_max,
              f'{what}: a metadata call blocked {res["meta_worst"]} s (at most {blocked_max})')
    print(f'# {what}: {res["meta"].splitlines()[0]} (the longest call blocked this long); '
          f'fio: {res["fio_tail"].splitlines()[-1].strip() if res["fio_tail"] else ""}')


def new_binary(m):
    """A copy of the daemon under another name: an upgrade's new build."""
    path = os.path.join(m.base, 'uringfs-new')
    shutil.copy2(m.daemon, path)
    return path


def empty_config():
    path = os.path.join(ufs.run_dir(), 'empty.conf')
    if not os.path.exists(path):
        open(path, 'w').close()
    return path


@case(mount=False, root=True, timeout=180)
def takeover_under_load():
    """A new binary takes a busy mount over with --take-over: the old daemon
    exits 0 without unmounting, and nothing the load does notices."""
    require_handover()
    with ufs.Mount() as m:
        load = ufs_load.Load(m.mnt, LOAD_SECONDS)
        try:
            time.sleep(LOAD_SECONDS / 3)
            old = m.proc
            cmd = [new_binary(m), '-f', '--config', empty_config(), '--take-over', m.mnt]
            with open(m.log, 'ab') as log:
                new = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            check_eq(old.wait(timeout=60), 0, 'the old daemon\'s exit status' + m.log_tail())
            m.proc = new
            check(ufs_load.wait_for(lambda: m.stats()['restarts'] == 1, 30),
                  'the new daemon serves, restart 1 of the mount' + m.log_tail())
            check_eq(load.locks_held(), (True, True), 'POSIX lock and flock held after it')
            res = load.finish()
        finally:
            load.kill()
        check_load(res, 'take-over', blocked_max=5)
        check(new.poll() is None, 'the new daemon still serves' + m.log_tail())
        check('handed ' in m.log_text() and 'took over' in m.log_text(),
              'both daemons logged the hand-over' + m.log_tail())


@case(mount=False, root=True, timeout=150)
def takeover_during_copies():
    """The copy seed's load (bench/cfr-seed.c: 30 processes each making one
    16 MiB copy_file_range call after another, and a probe) with a take-over
    in the middle, then an unmount: no copy fails or differs from its
    source, the old daemon exits 0, and the new one exits 0 within
    EXIT_TIMEOUT of the unmount (a review saw an ASan successor that did
    not)."""
    require_handover()
    src = ufs.scratch_dir('seed-src')
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=1200m', 'tmpfs', src], check=True)
    try:
        with ufs.Mount(source=src) as m:
            got, failed = {}, []

            def seed():
                try:
                    got.update(ufs.probe(m.mnt, 30, 3))
                except Exception as e:     # reported below, in the case's thread
                    failed.append(e)
            load = threading.Thread(target=seed)
            load.start()
            try:
                time.sleep(1.5)
                old = m.proc
                cmd = [new_binary(m), '-f', '--config', empty_config(), '--take-over', m.mnt]
                with open(m.log, 'ab') as log:
                    new = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True)
                check_eq(old.wait(timeout=60), 0, 'the old daemon\'s exit status' + m.log_tail())
                m.proc = new
            finally:
                load.join()
            check(not failed, f'the copy seed: {failed}')
            check_eq((got['failed'], got['bad']), (0, 0), 'copy calls that failed, copies '
                     f'that differ ({got["calls"]} calls)')
            check('handed ' in m.log_text(), 'no hand-over happened' + m.log_tail())
    finally:
        subprocess.run(['umount', '-l', src])


@case(mount=False, root=True, timeout=90)
def unmount_while_predecessor_leaves():
    """An unmount while the old daemon is still on its way out after handing
    over (an ASan build's exit takes about a second under the copy seed's
    load; the debug build waits 30 s here, UFS_DEBUG_PAUSE=handed_over): the
    new daemon sees the connection end and exits 0 within a few seconds, not
    once the old one has gone (it waited for that, up to 30 s)."""
    require_handover()
    ufs.require_debug_build()
    with ufs.Mount(env={'UFS_DEBUG_PAUSE': 'handed_over:30000'}) as m:
        ufs.write_file(f'{m.mnt}/f', b'before the take-over')
        old = m.proc
        cmd = [new_binary(m), '-f', '--config', empty_config(), '--take-over', m.mnt]
        try:
            with open(m.log, 'ab') as log:
                m.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
            check(ufs_load.wait_for(lambda: 'handed ' in m.log_text(), 30),
                  'the old daemon did not hand over' + m.log_tail())
            check_eq(ufs.read_file(f'{m.mnt}/f'), b'before the take-over', 'the file after it')
            check(old.poll() is None, 'the old daemon left before the unmount')
            m.stop(exit_timeout=5)
        finally:
            old.kill()
            old.wait()
    check('not waiting for it' in m.log_text(), 'the new daemon does not say why it left '
          'before the old one' + m.log_tail())


class SystemdMount:
    """The daemon as a systemd service with a file descriptor store."""

    def __init__(self, opts=None):
        cfg = ufs.config()
        self.base = ufs.scratch_dir('sd')
        self.src, self.mnt = f'{self.base}/src', f'{self.base}/mnt'
        os.makedirs(self.src)
        os.makedirs(self.mnt)
        self.opts = ufs.join_opts(opts, cfg.opts)
        self.argv = [cfg.daemon, '-f', '--config', empty_config()] + \
            (['-o', self.opts] if self.opts else []) + [self.src, self.mnt]
        self.svc = fake_systemd.Service(self.argv)
        self.logs = []

    def start(self, argv=None, ready=True):
        self.svc.start(argv or self.argv)
        if ready:
            check(self.svc.wait_ready(60), 'READY=1 from the service' + self.tail())

    def collect(self):
        if self.svc.proc and self.svc.proc.poll() is not None:
            self.logs.append(self.svc.stderr())

    def tail(self):
        self.collect()
        return '\nservice log:\n' + '\n'.join(self.logs)[-3000:]

    def stats(self):
        return ufs.Mount.stats(self)

    def unmount(self):
        """fusermount3 -u: the serving daemon must exit 0."""
        subprocess.run(['fusermount3', '-u', self.mnt], check=True)
        check_eq(self.svc.proc.wait(timeout=20), 0, 'the daemon exits 0 after the unmount')

    user = None

    def close(self):
        if ufs.mount_entry(self.mnt):
            subprocess.run(['fusermount3', '-u', self.mnt], capture_output=True)
        if self.svc.proc:
            try:
                self.svc.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        self.collect()
        self.svc.close()
        if ufs.mount_entry(self.mnt):
            subprocess.run(['umount', '-l', self.mnt], capture_output=True)


@case(mount=False, root=True, timeout=180)
def kill9_with_fdstore():
    """kill -9 of the daemon under load, restarted with the file descriptor
    store: callers block while no daemon runs, then carry on; fsynced data
    and fio's verification are intact; the locks are still held."""
    require_handover()
    sd = SystemdMount()
    try:
        sd.start()
        transport, zero_copy = sd.stats()['transport'], sd.stats()['zero_copy']
        check_eq(sorted({n.split('-')[0] for n in sd.svc.names()}),
                 sorted(['dev' if transport == 'dev' else 'ring', 'fuse', 'record']),
                 'what the daemon put in the store')
        load = ufs_load.Load(sd.mnt, LOAD_SECONDS)
        try:
            time.sleep(LOAD_SECONDS / 3)
            # The metadata loop runs (slow to start in the 7.3 guest): a call
            # of it must span the time no daemon runs.
            meta = f'{sd.mnt}/meta'
            check(ufs_load.wait_for(lambda: os.path.isdir(meta) and os.listdir(meta), 30),
                  'the metadata loop runs')
            sd.svc.kill(signal.SIGKILL)
            sd.collect()
            killed = time.monotonic()
            time.sleep(1.0)         # RestartSec=1
            sd.start()
            print(f'# restarted and ready {time.monotonic() - killed:.2f} s after kill -9')
            check_eq(sd.stats()['restarts'], 1, 'restart 1 of the mount')
            check_eq(load.locks_held(), (True, True), 'POSIX lock and flock held after it')
            res = load.finish()
        finally:
            load.kill()
        # Over io_uring the kernel ends what it was delivering to the dead
        # daemon's rings with ECANCELED (dev_uring.c: fuse_uring_send_in_task);
        # a zero-copied READ or WRITE held then had its pages in the dead
        # ring's buffer table: the successor can only answer it EIO.
        allowed = ()
        if transport == 'uring':
            allowed = (errno.ECANCELED,)
        if zero_copy == 'on':
            allowed += (errno.EIO,)
        check_load(res, f'kill -9 over {transport}', blocked_max=15, allowed=allowed)
        check(res['meta_worst'] >= 0.9, f'callers blocked while no daemon ran '
              f'(longest call {res["meta_worst"]} s)')
        sd.unmount()
    finally:
        sd.close()


@case(mount=False, root=True, timeout=180)
def bad_successor_leaves_mount():
    """A successor whose settings the live connection cannot have refuses,
    says why, and leaves the mount as it is; a good start then takes over
    and the blocked callers carry on."""
    require_handover()
    sd = SystemdMount()
    try:
        sd.start()
        ufs.write_file(f'{sd.mnt}/kept', b'before')
        sd.svc.kill(signal.SIGKILL)
        sd.collect()
        # A caller that blocks while nobody serves.
        reader = subprocess.Popen(['cat', f'{sd.mnt}/kept'], stdout=subprocess.PIPE)
        bad = [sd.argv[0], '-f', '--config', empty_config(), '-o',
               ufs.join_opts(sd.opts, 'writeback_cache=on'), sd.src, sd.mnt]
        sd.start(bad, ready=False)
        rc = sd.svc.proc.wait(timeout=60)
        sd.collect()
        check(rc != 0, 'the bad successor exits non-zero')
        check('negotiate' in sd.logs[-1] and 'unmount to change' in sd.logs[-1],
              'it says why' + sd.tail())
        check(ufs.mount_entry(sd.mnt) is not None, 'the mount stays')
        check(reader.poll() is None, 'the caller still waits')
        st = subprocess.run([ufs.config().daemon, '--stats', sd.mnt], capture_output=True,
                            text=True, timeout=30)
        check(st.returncode != 0 and 'not served' in st.stderr and 'negotiate' in st.stderr,
              f'--stats says why: rc {st.returncode}: {st.stderr.strip()}')
        sd.start()
        out, _ = reader.communicate(timeout=30)
        check_eq(out, b'before', 'the blocked caller carries on')
        check_eq(sd.stats()['restarts'], 1, 'the good start took over')
        sd.unmount()
    finally:
        sd.close()


@case(mount=False, root=True, timeout=120)
def call_after_crash_waits():
    """A call made after kill -9, once the daemon is reaped, waits for the
    successor and is served: the dead daemon's idle ring entries are gone
    with its threads (ring_guard.c), even while its rings live on (held
    here, as a busy workqueue holds their teardown back). Before, the
    call was given to a dead entry and ended ECANCELED."""
    require_handover()
    sd = SystemdMount()
    held = []
    reader = None
    try:
        sd.start()
        ufs.write_file(f'{sd.mnt}/kept', b'before')
        transport = sd.stats()['transport']
        held = sx.hold_rings(sd.svc.proc.pid)
        if transport == 'uring':
            check(held, 'the daemon has rings to hold')
        sd.svc.kill(signal.SIGKILL)     # returns once it is reaped
        sd.collect()
        reader = subprocess.Popen(['cat', f'{sd.mnt}/kept', f'{sd.mnt}/new-name'],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.5)
        check(reader.poll() is None, 'the caller waits while no daemon runs')
        sd.start()
        # The rings go now: a call left on a dead entry would end ECANCELED.
        for fd in held:
            os.close(fd)
        held = []
        out, err = reader.communicate(timeout=30)
        check_eq((out, err.decode().strip()),
                 (b'before', f'cat: {sd.mnt}/new-name: No such file or directory'),
                 f'the caller made after the crash (transport {transport})' + sd.tail())
        check_eq(sd.stats()['restarts'], 1, 'the successor took over')
        sd.unmount()
    finally:
        for fd in held:
            os.close(fd)
        if reader and reader.poll() is None:
            reader.kill()
            reader.wait()
        sd.close()


@case(mount=False, root=True, timeout=120)
def takeover_leaves_no_idle_entry():
    """After a take-over the old daemon's idle ring entries go with its
    ring threads, even while its rings live on (held here, as a busy
    workqueue holds their teardown back): with one entry per queue, calls
    that find the new daemon's entry busy wait for it. Before, the old
    daemon closed its rings and a call given to one of their idle entries
    meanwhile ended ECANCELED."""
    require_handover()
    small = 'io_uring=off' not in (ufs.config().opts or '')
    with ufs.Mount(opts='workers=1,queue_depth=1' if small else None) as m:
        held = sx.hold_rings(m.proc.pid)
        try:
            old = m.proc
            with open(m.log, 'ab') as log:
                new = subprocess.Popen([m.daemon, '-f', '--config', empty_config(),
                                        '--take-over', m.mnt], stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            check_eq(old.wait(timeout=60), 0, 'the old daemon exits 0' + m.log_tail())
            m.proc = new
            check(ufs_load.wait_for(lambda: m.stats()['restarts'] == 1, 30),
                  'the new daemon serves' + m.log_tail())
            errors = []

            def lookups(k):
                for j in range(60):
                    try:
                        os.stat(f'{m.mnt}/absent-{k}-{j}')
                    except FileNotFoundError:
                        pass
                    except OSError as e:
                        errors.append(errno.errorcode.get(e.errno, e.errno))

            threads = [threading.Thread(target=lookups, args=(k,), daemon=True)
                       for k in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
        finally:
            # The old rings go now: a call left on one of their entries ends ECANCELED.
            for fd in held:
                os.close(fd)
        for t in threads:
            t.join(30)
        check(not any(t.is_alive() for t in threads), 'every lookup ended')
        check_eq(errors, [], 'errors of the lookups after the take-over' + m.log_tail())


@case(mount=False, root=True, timeout=120)
def handles_across_takeover():
    """File handles taken before a take-over open the same files after it,
    whether the kernel still holds the inodes or forgot them first."""
    require_handover()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/a', b'alpha')
        os.makedirs(f'{m.mnt}/d')
        ufs.write_file(f'{m.mnt}/d/b', b'beta')
        handles = {n: sx.name_to_handle_at(f'{m.mnt}/{n}') for n in ('a', 'd', 'd/b')}
        ufs.drop_caches(2)
        old = m.proc
        with open(m.log, 'ab') as log:
            new = subprocess.Popen([m.daemon, '-f', '--config', empty_config(), '--take-over',
                                    m.mnt], stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        check_eq(old.wait(timeout=60), 0, 'the old daemon exits 0' + m.log_tail())
        m.proc = new
        with ufs.opened(m.mnt, os.O_RDONLY | os.O_DIRECTORY) as root:
            for name, want in (('a', b'alpha'), ('d/b', b'beta')):
                fd = sx.open_by_handle_at(root, handles[name], os.O_RDONLY)
                try:
                    check_eq(os.read(fd, 10), want, f'{name} by its handle after the take-over')
                finally:
                    os.close(fd)
            fd = sx.open_by_handle_at(root, handles['d'], os.O_RDONLY | os.O_DIRECTORY)
            try:
                check_eq(sorted(os.listdir(fd)), ['b'], 'd by its handle after the take-over')
            finally:
                os.close(fd)


@case(mount=False, root=True, timeout=120)
def takeover_refused_while_posix_locks_held():
    """POSIX locks live on their owners' own descriptions (fs_lock.c), which
    the hand-over does not pass on: a take-over while one is held is refused
    in one line, the lock stays held and the old daemon serves on; once it
    is unlocked the take-over goes through.  Before (review 40), the
    successor served and the lock was gone: another process took it."""
    require_handover()
    with ufs.Mount(opts='posix_locks=on') as m:
        ufs.write_file(f'{m.mnt}/locked', b'x')
        holder = subprocess.Popen(
            [sys.executable, '-c',
             'import fcntl, sys\n'
             'f = open(sys.argv[1], "r+")\n'
             'fcntl.lockf(f, fcntl.LOCK_EX)\n'
             'print("locked", flush=True)\n'
             'sys.stdin.readline()\n'
             'fcntl.lockf(f, fcntl.LOCK_UN)\n'
             'print("unlocked", flush=True)\n'
             'sys.stdin.readline()\n', f'{m.mnt}/locked'],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            check_eq(holder.stdout.readline().strip(), 'locked', 'the holder locks')
            old = m.proc
            r = subprocess.run([m.daemon, '-f', '--config', empty_config(), '--take-over',
                                m.mnt], stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=60)
            check(r.returncode != 0, 'a take-over while a POSIX lock is held is refused')
            check('POSIX lock' in r.stderr, f'saying why: {r.stderr!r}')
            check(old.poll() is None, 'the old daemon serves on' + m.log_tail())
            other = os.open(f'{m.mnt}/locked', os.O_RDWR)
            try:
                try:
                    fcntl.lockf(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    taken = True
                except OSError as e:
                    check(e.errno in (errno.EAGAIN, errno.EACCES), f'lockf: {e}')
                    taken = False
                check(not taken, 'the lock is still held after the refused take-over')
            finally:
                os.close(other)
            holder.stdin.write('\n')
            holder.stdin.flush()
            check_eq(holder.stdout.readline().strip(), 'unlocked', 'the holder unlocks')
            # Its owner's description goes at the holder's close (FLUSH): end it.
            holder.stdin.close()
            holder.wait(30)
            with open(m.log, 'ab') as log:
                new = subprocess.Popen([m.daemon, '-f', '--config', empty_config(),
                                        '--take-over', m.mnt], stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            check_eq(old.wait(timeout=60), 0, 'with no lock held the take-over goes through'
                     + m.log_tail())
            m.proc = new
            check_eq(ufs.read_file(f'{m.mnt}/locked'), b'x', 'the new daemon serves')
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait()


@case(mount=False, root=True, timeout=60)
def takeover_without_daemon_fails_cleanly():
    """--take-over of a path no daemon serves: one line saying so, exit 1."""
    require_handover()
    d = ufs.scratch_dir('nod')
    r = subprocess.run([ufs.config().daemon, '--take-over', d], capture_output=True, text=True,
                       timeout=30)
    check_eq(r.returncode, 1, 'exit status')
    check('no uringfs daemon' in r.stderr and len(r.stderr.strip().splitlines()) == 1,
          f'one line saying why: {r.stderr!r}')


@case(mount=False, root=True, timeout=60)
def second_daemon_refused():
    """A second start on a served mount point refuses, naming --take-over,
    and the mount goes on serving."""
    require_handover()
    with ufs.Mount() as m:
        ufs.write_file(f'{m.mnt}/f', b'still')
        r = subprocess.run([m.daemon, '-f', '--config', empty_config(), m.src, m.mnt],
                           capture_output=True, text=True, timeout=30)
        check_eq(r.returncode, 1, 'the second daemon\'s exit status')
        check('--take-over' in r.stderr, f'it says how to replace the running one: {r.stderr!r}')
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'still', 'the first one serves on')


def takeover_socket(real, uid=0):
    """The take-over socket's path (handover_socket.c): FNV-1a of the real path."""
    h = 0xcbf29ce484222325
    for b in real.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return f'/run/uringfs/takeover-{uid}-{h:016x}'


def connect_seqpacket(path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.connect(path)


@case(mount=False, root=True, timeout=60)
def takeover_socket_is_ours_alone():
    """The take-over socket is a file in root's /run/uringfs, mode 0600:
    another user can neither take its name first (an abstract name is
    anyone's) nor connect; it goes when the daemon does."""
    require_handover()
    with ufs.Mount() as m:
        path = takeover_socket(os.path.realpath(m.mnt))
        st = os.lstat(path)
        check(stat.S_ISSOCK(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600,
              f'{path}: mode {st.st_mode:o}, uid {st.st_uid}')
        d = os.lstat('/run/uringfs')
        check(d.st_uid == 0 and not d.st_mode & 0o022, f'/run/uringfs: mode {d.st_mode:o}')
        check_errno(errno.EACCES, ufs.as_user, connect_seqpacket, path,
                    what='another user connecting to the take-over socket')
        check_errno(errno.EACCES, ufs.as_user, os.mkdir, '/run/uringfs/squat',
                    what='another user making a name in /run/uringfs')
    check(not os.path.exists(path), f'{path} is left after the daemon ended')


@case(mount=False, root=True, timeout=60)
def start_leaves_others_mounts():
    """A uringfs-typed mount of another user whose source reads like root's
    options (fsname=user_id=0,x) is not root's dead mount: a root start
    there does not detach it, and fails with a message (the kernel keeps
    root out of a mount without allow_other)."""
    require_handover()
    src = ufs.scratch_dir('forged-src')
    mnt = f'{ufs.scratch_dir("forged")}/mnt'
    os.mkdir(mnt)
    dev = os.open('/dev/fuse', os.O_RDWR | os.O_CLOEXEC)
    try:
        # What fusermount3 -o subtype=uringfs,fsname=... gives an ordinary user.
        r = subprocess.run(['mount', '-i', '-t', 'fuse.uringfs', '-o',
                            f'fd={dev},rootmode=40000,user_id=65534,group_id=65534',
                            'user_id=0,x', mnt], pass_fds=(dev,), capture_output=True,
                           text=True)
        check_eq(r.returncode, 0, f'the forged mount: {r.stderr.strip()}')
    finally:
        os.close(dev)     # nobody serves it: as dead as a crashed daemon's
    try:
        check_eq(ufs.mount_entry(mnt).source, 'user_id=0,x', 'the forged mount is there')
        r = subprocess.run([ufs.config().daemon, '-f', '--config', empty_config(), src, mnt],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
        # The kernel keeps root out of another user's mount (no allow_other).
        check(r.returncode != 0 and mnt in r.stderr and 'no daemon serves' not in r.stderr,
              f'the start refuses, naming the mount point: status {r.returncode}: '
              f'{r.stderr.strip()}')
        check_eq(ufs.mount_entry(mnt).source, 'user_id=0,x', 'the forged mount is still there')
    finally:
        subprocess.run(['umount', '-l', mnt], capture_output=True)


@case(mount=False, root=True, timeout=60)
def start_over_a_dead_mount():
    """A daemon killed with nothing to carry on leaves a dead mount; the next
    start takes it away and serves."""
    require_handover()
    m = ufs.Mount()
    m.start()
    ufs.write_file(f'{m.mnt}/f', b'data')
    m.kill_daemon()
    m.proc.wait(timeout=30)
    check(ufs.mount_entry(m.mnt) is not None, 'the dead mount is there')
    m.killed = False
    m.mounted = False
    before = len(m.log_text())
    with open(m.log, 'ab') as log:
        m.proc = subprocess.Popen([m.daemon, '-f', '--config', empty_config(), m.src, m.mnt],
                                  stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        check(ufs_load.wait_for(lambda: m.proc.poll() is None and
                                'serving' in m.log_text()[before:], 20),
              'the new daemon serves' + m.log_tail())
        m.mounted = True
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'data', 'through the new mount')
        check('no daemon serves' in m.log_text()[before:], 'it said it took the dead mount away')
        m.stop()
    except BaseException:
        m.abort()
        raise


@case(mount=False, root=True, timeout=120)
def moved_out_while_down():
    """A successor proves the inodes of its predecessor's record inside SOURCE
    before serving them, as LOOKUP does: a file or directory moved out of
    SOURCE while no daemon runs is stale (ESTALE or ENOENT) through the
    descriptors that still name it, while a file left inside is served,
    also once the kernel dropped its backing dentry (found in its directory,
    which the record names)."""
    require_handover()
    sd = SystemdMount()
    outside = os.path.join(sd.base, 'outside')
    os.makedirs(outside)
    held = {}
    try:
        sd.start()
        os.makedirs(f'{sd.mnt}/d/sub')
        for name in ('d/kept', 'd/gone', 'd/sub/f'):
            ufs.write_file(f'{sd.mnt}/{name}', name.encode())
        # O_PATH descriptors hold the kernel's inodes (and so the record's)
        # without opening anything in the daemon.
        for name in ('d/kept', 'd/gone', 'd/sub'):
            held[name] = os.open(f'{sd.mnt}/{name}', os.O_PATH)
        sd.svc.kill(signal.SIGKILL)
        sd.collect()
        os.rename(f'{sd.src}/d/gone', f'{outside}/gone')
        os.rename(f'{sd.src}/d/sub', f'{outside}/sub')
        # The backing dentries go: a file's handle then opens a disconnected
        # one, whose path proves nothing (other tests drop caches anyway).
        ufs.drop_caches(2)
        sd.start()
        check_eq(sd.stats()['restarts'], 1, 'restart 1 of the mount')

        def reopen(name, flags=os.O_RDONLY):
            fd = os.open(f'/proc/self/fd/{held[name]}', flags)
            try:
                if flags & os.O_DIRECTORY:
                    return sorted(os.listdir(fd))
                return os.read(fd, 100)
            finally:
                os.close(fd)

        kept = ufs.outcome(reopen, 'd/kept')
        check_eq(kept.value, b'd/kept', f'a file left inside, after the restart ({kept})' +
                 sd.tail())
        for name, flags in (('d/gone', os.O_RDONLY), ('d/sub', os.O_RDONLY | os.O_DIRECTORY)):
            got = ufs.outcome(reopen, name, flags)
            check(got.err in (errno.ESTALE, errno.ENOENT),
                  f'{name}, moved out of SOURCE while no daemon ran: got {got}, '
                  f'want ESTALE or ENOENT' + sd.tail())
        with open(f'{outside}/gone', 'rb') as f:
            check_eq(f.read(), b'd/gone', 'the moved-out file is untouched')
    finally:
        for fd in held.values():
            os.close(fd)
        sd.close()
