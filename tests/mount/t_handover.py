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
import select
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


def start_successor(m):
    """uringfs --take-over of m by a copy of its daemon, logging to m's log."""
    cmd = [new_binary(m), '-f', '--config', empty_config(), '--take-over', m.mnt]
    with open(m.log, 'ab') as log:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)


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
            new = start_successor(m)
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
                new = start_successor(m)
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
        try:
            m.proc = start_successor(m)
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


# A process holding POSIX locks through the mount, one command a line:
# "lock START" and "unlock START" of the byte at START, "exit" (without
# unlocking: its close releases).  It says "ok" after each, and "ready" first.
LOCKER = """
import fcntl, sys
f = open(sys.argv[1], "r+")
print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "exit":
        break
    op = fcntl.LOCK_EX if cmd[0] == "lock" else fcntl.LOCK_UN
    fcntl.lockf(f, op, 1, int(cmd[1]))
    print("ok", flush=True)
"""


class Locker:
    """A process of its own (its own lock owner) locking bytes of path."""

    def __init__(self, path):
        self.proc = subprocess.Popen([sys.executable, '-c', LOCKER, path], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        check_eq(self.answer(30), 'ready', 'the locker opens the file')

    def send(self, line):
        self.proc.stdin.write(line + '\n')
        self.proc.stdin.flush()

    def answer(self, timeout):
        """Its next line within timeout seconds, or None."""
        if not select.select([self.proc.stdout], [], [], timeout)[0]:
            return None
        return self.proc.stdout.readline().strip()

    def exit(self):
        self.send('exit')
        check_eq(self.proc.wait(30), 0, 'the locker exits')

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def byte_locked(path, start):
    """Whether another owner holds the byte at start: F_SETLK of this process
    (EAGAIN: held), and F_GETLK's holder pid."""
    fd = os.open(path, os.O_RDWR)
    try:
        got = ufs.outcome(sx.lock, fd, fcntl.F_SETLK, fcntl.F_WRLCK, start, 1)
        if got.err is None:
            sx.lock(fd, fcntl.F_SETLK, fcntl.F_UNLCK, start, 1)
            return False, 0
        check(got.err in (errno.EAGAIN, errno.EACCES), f'F_SETLK of byte {start}: {got}')
        return True, sx.lock(fd, fcntl.F_GETLK, fcntl.F_WRLCK, start, 1)[4]
    finally:
        os.close(fd)


def take_over(m):
    """--take-over by a new binary; the new daemon serves when it returns."""
    old = m.proc
    new = start_successor(m)
    deadline = time.monotonic() + 60
    while old.poll() is None and new.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    check(new.poll() is None, f'the take-over failed (status {new.returncode})' + m.log_tail())
    check_eq(old.wait(timeout=5), 0, 'the old daemon exits 0' + m.log_tail())
    m.proc = new
    check(ufs_load.wait_for(lambda: m.stats()['restarts'] == 1, 30),
          'the new daemon serves, restart 1 of the mount' + m.log_tail())


@case(mount=False, root=True, timeout=180)
def posix_locks_kept_across_takeover():
    """With posix_locks=on the daemon holds each lock owner's locks on a
    description of its own (fs_lock.c): a take-over hands those over, so a
    lock held before is held after (another process's F_SETLK fails,
    F_GETLK names the holder), an F_SETLKW blocked across it gets the lock
    once the holder unlocks through the new daemon, and the holder's close
    releases what it still holds (FLUSH of its owner), as does the last
    close of an open holding an OFD lock (RELEASE of its fh).  Before, the take-over was refused
    (97eb846), and before that the successor served with the locks gone."""
    require_handover()
    with ufs.Mount(opts='posix_locks=on') as m:
        path = f'{m.mnt}/locked'
        ufs.write_file(path, b'xy')
        ufs.write_file(f'{m.mnt}/ofd', b'z')
        holder = waiter = None
        ofd = os.open(f'{m.mnt}/ofd', os.O_RDWR)
        try:
            sx.lock(ofd, fcntl.F_OFD_SETLK, fcntl.F_WRLCK, 0, 1)
            holder = Locker(path)
            for start in (0, 1):
                holder.send(f'lock {start}')
                check_eq(holder.answer(30), 'ok', f'the holder locks byte {start}')
            waiter = Locker(path)
            waiter.send('lock 0')
            check_eq(waiter.answer(1), None, 'the waiter blocks in F_SETLKW')
            take_over(m)
            for start in (0, 1):
                check_eq(byte_locked(path, start), (True, holder.proc.pid),
                         f'byte {start} still held by the holder after the take-over')
            check(byte_locked(f'{m.mnt}/ofd', 0)[0], 'the OFD lock still held after it')
            check_eq(waiter.answer(0.5), None, 'the waiter still waits after the take-over')
            holder.send('unlock 0')
            check_eq(holder.answer(30), 'ok', 'the holder unlocks byte 0 after the take-over')
            check_eq(waiter.answer(30), 'ok', 'the waiter gets byte 0 after the unlock'
                     + m.log_tail())
            # F_GETLK names some other owner's process (fs_lock.c conflict_pid): two now.
            check(byte_locked(path, 0)[0], 'the waiter holds byte 0')
            check(byte_locked(path, 1)[0], 'the holder keeps byte 1')
            holder.exit()
            check_eq(byte_locked(path, 1), (False, 0), 'the holder\'s close released byte 1')
            waiter.exit()
            check_eq(byte_locked(path, 0), (False, 0), 'the waiter\'s close released byte 0')
            os.close(ofd)
            ofd = -1
            check_eq(byte_locked(f'{m.mnt}/ofd', 0), (False, 0),
                     'closing the OFD lock\'s open released it')
            check_eq(ufs.read_file(path), b'xy', 'the new daemon serves')
        finally:
            if ofd >= 0:
                os.close(ofd)
            for p in (holder, waiter):
                if p:
                    p.kill()


def hello(pid, features):
    """A take-over HELLO (handover_socket.c's struct handover_msg, 1272 bytes)."""
    head = (0x48534655).to_bytes(4, 'little') + (1).to_bytes(4, 'little') + bytes(4)
    return head + pid.to_bytes(4, 'little') + features.to_bytes(4, 'little') + bytes(1272 - 20)


@case(mount=False, root=True, timeout=120)
def takeover_by_older_build_refused_while_posix_locks_held():
    """A successor that cannot take the lock owners over (an older build:
    its HELLO names no FEATURE_LOCKS) is refused in one line while one holds
    a lock, and the old daemon serves on with the lock held."""
    require_handover()
    with ufs.Mount(opts='posix_locks=on') as m:
        path = f'{m.mnt}/locked'
        ufs.write_file(path, b'x')
        holder = Locker(path)
        try:
            holder.send('lock 0')
            check_eq(holder.answer(30), 'ok', 'the holder locks')
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.settimeout(60)
                s.connect(takeover_socket(os.path.realpath(m.mnt)))
                s.send(hello(os.getpid(), 0))
                reply = s.recv(4096)
            check_eq(int.from_bytes(reply[4:8], 'little'), 6, 'the daemon answers FAIL')
            text = reply[1016:].split(b'\0')[0].decode()
            check('POSIX lock' in text and 'older build' in text, f'saying why: {text!r}')
            check(m.proc.poll() is None, 'the old daemon serves on' + m.log_tail())
            check_eq(byte_locked(path, 0), (True, holder.proc.pid), 'the lock is still held')
            holder.exit()
            check_eq(byte_locked(path, 0), (False, 0), 'the holder\'s close released it')
        finally:
            holder.kill()


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
def takeover_lock_format_checked():
    """A successor says in its HELLO that it takes lock owners over
    (FEATURE_LOCKS), and refuses LOCKS in a format it does not read (a
    version or entry size of another build) in one line, exit 1.  Played
    against a fake running daemon on the take-over socket of a directory."""
    require_handover()
    d = ufs.scratch_dir('fmt')
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as lsock:
        lsock.bind(takeover_socket(os.path.realpath(d)))
        lsock.listen(1)
        lsock.settimeout(30)
        succ = subprocess.Popen([ufs.config().daemon, '--take-over', d], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            conn, _ = lsock.accept()
            with conn:
                conn.settimeout(30)
                h = conn.recv(4096)
                check_eq((len(h), int.from_bytes(h[4:8], 'little')), (1272, 1), 'a HELLO')
                check_eq(int.from_bytes(h[16:20], 'little') & 1, 1, 'it names FEATURE_LOCKS')
                locks = ((0x48534655).to_bytes(4, 'little') + (7).to_bytes(4, 'little') +
                         bytes(8) + (2).to_bytes(4, 'little') + (32).to_bytes(4, 'little'))
                conn.send(locks + bytes(1272 - len(locks)))
                _, err = succ.communicate(timeout=30)
        finally:
            if succ.poll() is None:
                succ.kill()
                succ.wait()
            os.unlink(takeover_socket(os.path.realpath(d)))
    check_eq(succ.returncode, 1, 'exit status')
    check('format 2' in err and len(err.strip().splitlines()) == 1,
          f'one line saying why: {err!r}')


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


def cpu_ticks(pid):
    """utime + stime of process pid, in clock ticks."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])


@case(mount=False, root=True, timeout=180)
def takeover_refused_when_out_of_descriptors():
    """The old daemon at its RLIMIT_NOFILE (root's opens over the copy path
    fill it; root's are never bounded): its spare descriptor lets the
    successor in to hear why, in one line, and it serves on without
    spinning (accept4's EMFILE left the socket readable: a core spun until
    a descriptor freed, review 47)."""
    import t_budget
    require_handover()
    with t_budget.LimitedMount(opts='io_path=copy') as m:
        ufs.write_file(f'{m.src}/f', b'kept')
        t_budget.own_fd_room(4 * t_budget.LIMIT)
        fds = []
        try:
            while len(fds) < 2 * t_budget.LIMIT:
                try:
                    fds.append(os.open(f'{m.mnt}/f', os.O_RDONLY))
                except OSError as e:
                    check_eq(e.errno, errno.EMFILE, 'an open past the daemon\'s limit')
                    break
            check(len(fds) < 2 * t_budget.LIMIT, f'{len(fds)} opens: the daemon never ran out')
            binary = os.path.join(m.base, 'uringfs-new')
            shutil.copy2(m.daemon, binary)
            new = subprocess.run([binary, '-f', '--config', empty_config(), '--take-over', m.mnt],
                                 stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                 timeout=90)
            check(new.returncode != 0, 'the take-over of a daemon out of descriptors succeeded')
            check('out of descriptors' in new.stderr, f'the successor says why: {new.stderr!r}')
            t0 = cpu_ticks(m.proc.pid)
            time.sleep(3)
            busy = cpu_ticks(m.proc.pid) - t0
            check(busy < 60, f'the old daemon spins: {busy} ticks of CPU in 3 s')
        finally:
            for fd in fds:
                os.close(fd)
        check(m.proc.poll() is None, 'the old daemon serves on')
        check_eq(ufs.read_file(f'{m.mnt}/f'), b'kept', 'a read through the mount after')
