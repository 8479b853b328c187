# SPDX-License-Identifier: GPL-2.0-or-later
"""The daemon's descriptors, shared out per user (daemon/budget.c).

Issue 24: one ordinary user opening its own file again and again filled the
daemon's RLIMIT_NOFILE, and from then on every other user and root got
EMFILE through the mount.  Here the daemon runs under a limit of LIMIT
descriptors (so a flood takes a second, not 20,000 opens) and the
`open_fds_per_user` default, auto: 256 reserved, 192 per user.  ufs-test
floods from two processes until EMFILE (or FLOOD opens each) while nobody
and root open, read, create and list; passed-through opens must cost the
daemon no descriptor at all; POSIX lock owners are charged to the locker;
a take-over keeps the charges; four users flooding at once leave a fifth
its floor.
"""

import contextlib
import errno
import fcntl
import os
import resource
import shutil
import struct
import subprocess
import time

import ufs
from ufs import case, check, check_eq

LIMIT = 1024            # the daemon's RLIMIT_NOFILE in these cases
SHARE = 192             # auto: (LIMIT - 256) / 4 (uringfs.conf(5))
FLOOD = 700             # opens per flooding process at most: two fill LIMIT
NOBODY = 65534


def limit_fds():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


class LimitedMount(ufs.Mount):
    """A mount whose daemon runs under RLIMIT_NOFILE = LIMIT."""

    def _user_kwargs(self):
        kw = super()._user_kwargs()
        kw['preexec_fn'] = limit_fds
        return kw


def require_daemon_here():
    ufs.require_daemon('the descriptor budget is the daemon\'s')
    ufs.test_user()


def own_fd_room(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def flooder(chan, path, most, flags=os.O_RDONLY):
    """Child: open path up to most times, until EMFILE; report how many and
    the error, hold them until told, then close."""
    return spread_flooder(chan, [path], most, flags)


@contextlib.contextmanager
def flood(path, procs=2, most=FLOOD, user=ufs.TEST_USER, flags=os.O_RDONLY):
    """procs processes of user hold opens of path; yields [(count, errno)]."""
    children = [ufs.Child(flooder, path, most, flags, user=user) for _ in range(procs)]
    try:
        got = [c.recv(timeout=120) for c in children]
        yield got
        for c in children:
            c.send('close')
            c.join(timeout=120)
    finally:
        for c in children:
            c.kill()


def prepare(m):
    """src: the flooder's own file, a shared readable file, a directory all may
    write, and nothing else; returns the test user's uid."""
    uid = ufs.test_user().pw_uid
    ufs.write_file(f'{m.src}/mine', b'flood', 0o600)
    os.chown(f'{m.src}/mine', uid, -1)
    ufs.write_file(f'{m.src}/shared', b'shared data', 0o644)
    os.mkdir(f'{m.src}/open', 0o777)
    os.chmod(f'{m.src}/open', 0o1777)
    return uid


def others_work(m, tag):
    """As nobody and as root: open and read, create, list a new directory.
    Returns the failures as text (empty: none)."""
    def ops(name):
        out = []
        try:
            with open(f'{m.mnt}/shared', 'rb') as f:
                if f.read() != b'shared data':
                    out.append('read the wrong bytes')
            path = f'{m.mnt}/open/{name}-{tag}'
            with open(path, 'wb') as f:
                f.write(b'x')
            os.mkdir(path + '.d')
            ufs.write_file(path + '.d/f', b'y')
            if os.listdir(path + '.d') != ['f']:
                out.append('listing of a new directory is wrong')
        except OSError as e:
            out.append(f'{e.strerror} ({errno.errorcode.get(e.errno)}) in {e.filename}')
        return out

    fails = [f'nobody: {t}' for t in ufs.as_user(ops, 'nobody', user=NOBODY, groups=[])]
    fails += [f'root: {t}' for t in ops('root')]
    return '; '.join(fails)


def daemon_fds(m):
    return len(os.listdir(f'/proc/{m.pid}/fd'))


def wait_charged(m, want, what, timeout=30):
    """fds_charged reaches want (RELEASE reaches the daemon after close(2)
    returns, so it may lag)."""
    deadline = time.monotonic() + timeout
    while True:
        got = m.stats().get('fds_charged')
        if got == want or time.monotonic() > deadline:
            check_eq(got, want, f'descriptors charged {what}')
            return
        time.sleep(0.05)


def holder(chan, path):
    """Child: hold path open until told."""
    fd = os.open(path, os.O_RDONLY)
    chan.send('open')
    chan.recv(timeout=120)
    os.close(fd)
    return 0


@case(mount=False, root=True, timeout=180)
def flood_leaves_others_served():
    """ufs-test floods the copy path (io_path=copy: every open holds a
    descriptor) from two processes: it is the one that gets EMFILE, at its
    share; nobody and root open, read, create and list without an error."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,io_path=copy') as m:
        prepare(m)
        with flood(f'{m.mnt}/mine') as got:
            total = sum(n for n, _ in got)
            fails = others_work(m, 'flood')
            check_eq(fails, '', 'other users and root during the flood')
            check(all(e == errno.EMFILE for _, e in got),
                  f'the flooder is the one refused, with EMFILE: {got}')
            check(total <= SHARE, f'the flooder holds at most its share ({SHARE}): {total}')
            check(m.stats()['fds_refused'] >= 2, 'the refusals are counted')
            print(f'# flooder: {got}, daemon descriptors {daemon_fds(m)} of {LIMIT}')
        check_eq(others_work(m, 'after'), '', 'other users and root after the flood')
        wait_charged(m, 0, 'once every open is closed')


def spread_flooder(chan, paths, most, flags=os.O_RDONLY):
    """Child: open paths[0], paths[1], ... (the last one again and again once
    past the end) up to most times, until EMFILE; report how many and the
    error, hold them until told, then close."""
    own_fd_room(most + 64)
    fds, err = [], None
    try:
        while len(fds) < most:
            fds.append(os.open(paths[min(len(fds), len(paths) - 1)], flags))
    except OSError as e:
        err = e.errno
    chan.send((len(fds), err))
    chan.recv(timeout=120)
    for fd in fds:
        os.close(fd)
    return len(fds)


def open_cost(m):
    """What an open of a file nobody holds costs: 2 with file handles (its
    descriptor and the inode's it pins), 1 without."""
    with ufs.Child(holder, f'{m.mnt}/shared', user=ufs.TEST_USER) as c:
        c.recv()
        cost = m.stats()['fds_charged']
        c.send('close')
        c.join()
    wait_charged(m, 0, 'after the probe open')
    return cost


@case(mount=False, root=True, timeout=180)
def four_floods_leave_a_fifth_served():
    """Four ordinary users flood at once: at their share (auto: a quarter of
    the pool) together they fill all that ordinary users may hold.  They are
    the ones refused; a fifth user (uid 1) still opens and reads a file,
    lists a directory and creates one (its floor, borrowed from the
    reserve), and so does root."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,io_path=copy') as m:
        prepare(m)
        floods = [ufs.TEST_USER, NOBODY, 2, 3]
        # Each user its own files, so that each open costs the same and the
        # four shares (4 x SHARE: the whole pool) fill exactly.
        cost = open_cost(m)
        files = SHARE // cost
        paths = []
        for i in range(len(floods)):
            d = f'{m.src}/flood{i}'
            os.mkdir(d, 0o755)
            for j in range(files if cost > 1 else 1):
                ufs.write_file(f'{d}/f{j}', b'f', 0o644)
            paths.append([f'{m.mnt}/flood{i}/f{j}' for j in range(files if cost > 1 else 1)])
        children = []
        try:
            for user, p in zip(floods, paths):
                children.append(ufs.Child(spread_flooder, p, 2 * SHARE, user=user, groups=[]))
            got = [c.recv(timeout=120) for c in children]
            check(all(e == errno.EMFILE for _, e in got),
                  f'the flooders are refused, with EMFILE: {got}')
            check_eq(m.stats()['fds_charged'], 4 * SHARE,
                     f'four shares fill the pool (opens {got}, cost {cost})')

            def fifth():
                out = []
                try:
                    with open(f'{m.mnt}/shared', 'rb') as f:
                        if f.read() != b'shared data':
                            out.append('read the wrong bytes')
                    os.listdir(f'{m.mnt}/open')
                    path = f'{m.mnt}/open/fifth'
                    os.mkdir(path)
                    ufs.write_file(path + '/f', b'y')
                    if os.listdir(path) != ['f']:
                        out.append('listing of a new directory is wrong')
                except OSError as e:
                    out.append(f'{e.strerror} ({errno.errorcode.get(e.errno)}) in {e.filename}')
                return '; '.join(out)

            check_eq(ufs.as_user(fifth, user=1, groups=[]), '',
                     'a fifth user while four users hold the pool')
            wait_charged(m, 4 * SHARE, 'once the fifth closed (what it borrowed is back)')
            with open(f'{m.mnt}/shared', 'rb') as f:
                check_eq(f.read(), b'shared data', 'root reads meanwhile')
            print(f'# flooders: {got}, daemon descriptors {daemon_fds(m)} of {LIMIT}')
            for c in children:
                c.send('close')
                c.join(timeout=120)
        finally:
            for c in children:
                c.kill()
        wait_charged(m, 0, 'once every open is closed')


@case(mount=False, root=True, timeout=120)
def pin_moves_to_remaining_holder():
    """The inode descriptor an open file pins is charged to one of the inode's
    opens: when that one closes and another user still holds the file open,
    the charge moves to that user instead of vanishing."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,io_path=copy') as m:
        prepare(m)
        os.chmod(f'{m.src}/shared', 0o666)
        path = f'{m.mnt}/shared'
        with ufs.Child(holder, path, user=ufs.TEST_USER) as a:
            a.recv()
            first = m.stats()['fds_charged']
            if first == 1:
                raise ufs.Skip('no file handles here: every inode holds a descriptor, '
                               'charged to nobody')
            check_eq(first, 2, 'ufs-test: its descriptor and the inode\'s')
            with ufs.Child(holder, path, user=NOBODY, groups=[]) as b:
                b.recv()
                wait_charged(m, 3, 'with nobody holding it too (the inode\'s paid once)')
                a.send('close')
                a.join()
                wait_charged(m, 2, 'after ufs-test closed: nobody pays for the inode now')
                b.send('close')
                b.join()
        wait_charged(m, 0, 'after both closed')


@case(mount=False, root=True, timeout=180)
def create_refused_before_made():
    """A CREATE over the share fails EMFILE and leaves no file behind."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,io_path=copy') as m:
        prepare(m)
        os.mkdir(f'{m.src}/mk')
        os.chmod(f'{m.src}/mk', 0o777)

        def creator():
            own_fd_room(SHARE + 64)
            fds, err, name = [], None, None
            try:
                while len(fds) < SHARE + 10:
                    name = f'{m.mnt}/mk/f{len(fds)}'
                    fds.append(os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except OSError as e:
                err = e.errno
            left = os.path.exists(name)
            for fd in fds:
                os.close(fd)
            return len(fds), err, left, os.path.basename(name)

        n, err, left, name = ufs.as_user(creator, user=ufs.TEST_USER, timeout=120)
        check_eq(errno.errorcode.get(err), 'EMFILE', f'the create after {n} opens')
        check(not left and not os.path.exists(f'{m.src}/mk/{name}'),
              f'the refused create of {name} left no file')
        check_eq(len(os.listdir(f'{m.src}/mk')), n, 'only the created files exist')
        wait_charged(m, 0, 'once every open is closed')


def require_passthrough(m):
    st = m.stats()
    if st.get('passthrough') != 'on':
        raise ufs.Skip(f'kernel passthrough is {st.get("passthrough")} here '
                       f'({st.get("passthrough_off_reason", "see the daemon log")})')


def require_own_io_path():
    if 'io_path=' in (ufs.config().opts or ''):
        raise ufs.Skip(f'the variant sets the io_path ({ufs.config().opts})')


@case(mount=False, root=True, timeout=180)
def passthrough_opens_cost_nothing():
    """Passed-through opens hold no descriptor in the daemon: ufs-test opens
    its file 3 x SHARE times, none refused, and the daemon's descriptor count
    does not grow with them; fsync, fallocate, ftruncate and flock on such an
    open still work (the daemon opens the file per request)."""
    require_daemon_here()
    require_own_io_path()
    with LimitedMount(opts='allow_other,io_path=passthrough,flock_locks=on') as m:
        prepare(m)
        require_passthrough(m)
        before = daemon_fds(m)
        with flood(f'{m.mnt}/mine', most=3 * SHARE // 2, flags=os.O_RDWR) as got:
            during = daemon_fds(m)
            check_eq([e for _, e in got], [None, None], f'no open refused: {got}')
            check(during - before < 32,
                  f'the daemon holds no descriptor per open: {before} before, {during} '
                  f'with {sum(n for n, _ in got)} opens')
            check_eq(others_work(m, 'pt'), '', 'other users and root')

        def data_ops():
            fd = os.open(f'{m.mnt}/mine', os.O_RDWR)
            try:
                os.write(fd, b'0123456789')
                os.fsync(fd)
                os.posix_fallocate(fd, 0, 8192)
                os.ftruncate(fd, 4)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return os.pread(fd, 10, 0)
            finally:
                os.close(fd)

        check_eq(ufs.as_user(data_ops, user=ufs.TEST_USER), b'0123', 'data operations')
        st = m.stats()
        check(st['opens_passthrough'] >= 3 * SHARE, f'the opens were passed through: {st}')


@case(mount=False, root=True, timeout=60)
def fdless_open_of_a_file_made_immutable():
    """A passed-through O_RDWR open whose file was made immutable since: the
    daemon cannot open it for writing again, but fsync, lseek and lsattr on
    the open work as natively (a read-only descriptor serves them), and a
    write-like call fails EPERM as natively."""
    require_daemon_here()
    require_own_io_path()
    with LimitedMount(opts='io_path=passthrough') as m:
        prepare(m)
        require_passthrough(m)
        fd = os.open(f'{m.mnt}/shared', os.O_RDWR)
        try:
            r = subprocess.run(['chattr', '+i', f'{m.src}/shared'], capture_output=True,
                               text=True)
            if r.returncode:
                raise ufs.Skip(f'chattr +i on the backing file: {r.stderr.strip()}')
            try:
                os.fsync(fd)
                check_eq(os.lseek(fd, 0, os.SEEK_END), 11, 'lseek through the mount')
                check_eq(ufs.outcome(os.posix_fallocate, fd, 0, 8192).err, errno.EPERM,
                         'fallocate of an immutable file')
            finally:
                subprocess.run(['chattr', '-i', f'{m.src}/shared'], check=True)
        finally:
            os.close(fd)


@case(mount=False, root=True, timeout=180)
def lock_owners_charged():
    """POSIX lock owners hold a description each in the daemon: ufs-test's
    OFD locks on many opens (passed through: free) are refused with EMFILE
    at its share, while nobody still locks."""
    require_daemon_here()
    require_own_io_path()
    with LimitedMount(opts='allow_other,posix_locks=on,io_path=passthrough') as m:
        prepare(m)
        require_passthrough(m)

        def locker(path, most):
            own_fd_room(most + 64)
            fds, err = [], None
            try:
                while len(fds) < most:
                    fd = os.open(path, os.O_RDWR)
                    fds.append(fd)
                    lk = struct.pack('hhqqi4x', fcntl.F_WRLCK, os.SEEK_SET, len(fds), 1, 0)
                    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lk)
            except OSError as e:
                err = e.errno
            n = len(fds)
            for fd in fds:
                os.close(fd)
            return n, err

        n, err = ufs.as_user(locker, f'{m.mnt}/mine', 2 * SHARE, user=ufs.TEST_USER,
                             timeout=120)
        check_eq(errno.errorcode.get(err), 'EMFILE', f'the lock after {n} locks')
        check(n <= SHARE + 1, f'at most its share of owners ({SHARE}): {n}')
        os.chmod(f'{m.src}/shared', 0o666)
        n, err = ufs.as_user(locker, f'{m.mnt}/shared', 8, user=NOBODY, groups=[])
        check_eq((n, err), (8, None), 'nobody locks meanwhile')
        # An OFD lock's owner is its open file: RELEASE ends it (no FLUSH names it).
        wait_charged(m, 0, 'once every lock owner is gone')


def take_over(m):
    """A new daemon (under the same limit) takes the mount over."""
    empty = os.path.join(ufs.run_dir(), 'empty.conf')
    old = m.proc
    with open(m.log, 'ab') as log:
        new = subprocess.Popen([m.daemon, '-f', '--config', empty, '--take-over', m.mnt],
                               stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True, preexec_fn=limit_fds)
    check_eq(old.wait(timeout=60), 0, 'the old daemon exits 0' + m.log_tail())
    m.proc = new


@case(mount=False, root=True, timeout=120)
def takeover_keeps_fdless_opens():
    """A passed-through open, which keeps no descriptor in the daemon, survives
    a take-over: written through, fsynced, flocked and closed after it."""
    require_daemon_here()
    require_own_io_path()
    with LimitedMount(opts='allow_other,io_path=passthrough,flock_locks=on') as m:
        prepare(m)
        require_passthrough(m)
        fd = os.open(f'{m.mnt}/shared', os.O_RDWR)
        try:
            check_eq(m.stats()['backing_ids'], 1, 'passed through')
            take_over(m)
            os.pwrite(fd, b'after', 0)
            os.fsync(fd)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            check_eq(os.pread(fd, 11, 0), b'afterd data', 'read back after the take-over')
        finally:
            os.close(fd)
        check_eq(ufs.read_file(f'{m.src}/shared'), b'afterd data', 'the backing file')
        deadline = time.monotonic() + 30
        while m.stats()['backing_ids'] and time.monotonic() < deadline:
            time.sleep(0.05)
        check_eq(m.stats()['backing_ids'], 0, 'the backing id closed by the last RELEASE')


@case(mount=False, root=True, timeout=180)
def takeover_keeps_charges():
    """A successor taking the mount over charges the opens it inherits to
    their users: ufs-test holding most of its share gets only the rest."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,io_path=copy') as m:
        prepare(m)
        held = SHARE - 40
        with flood(f'{m.mnt}/mine', procs=1, most=held) as got:
            check_eq(got, [(held, None)], 'the first opens')
            take_over(m)
            with flood(f'{m.mnt}/mine', procs=1, most=SHARE) as more:
                n, err = more[0]
                check_eq(errno.errorcode.get(err), 'EMFILE', f'after {n} more opens')
                check(n <= SHARE - held, f'the successor counts the {held} inherited opens: '
                      f'{n} more were allowed')
                check_eq(others_work(m, 'succ'), '', 'other users and root')
        wait_charged(m, 0, 'once every open is closed, across the take-over')


def ofd_locker(chan, path, n):
    """Child: an OFD lock on each of n opens of path (n lock owners); hold them
    until told, then close."""
    fds = []
    try:
        for i in range(n):
            fds.append(os.open(path, os.O_RDWR))
            lk = struct.pack('hhqqi4x', fcntl.F_WRLCK, os.SEEK_SET, i, 1, 0)
            fcntl.fcntl(fds[-1], fcntl.F_OFD_SETLK, lk)
        chan.send(len(fds))
        chan.recv(timeout=600)
    finally:
        for fd in fds:
            os.close(fd)


@case(mount=False, root=True, timeout=180)
def takeover_keeps_lock_owner_charges():
    """The lock owners' descriptions a take-over hands over (posix_locks=on)
    stay charged to their locker in the successor, and their charges go
    with them at the last close."""
    require_daemon_here()
    with LimitedMount(opts='allow_other,posix_locks=on,io_path=copy') as m:
        prepare(m)
        locker = ufs.Child(ofd_locker, f'{m.mnt}/mine', 20, user=ufs.TEST_USER)
        try:
            check_eq(locker.recv(timeout=120), 20, 'the locks taken')
            before = m.stats()['fds_charged']
            check(before >= 40, f'20 opens and 20 lock owners charged: {before}')
            take_over(m)
            wait_charged(m, before, 'after the take-over, as before it')
            locker.send('close')
            locker.join(timeout=120)
        finally:
            locker.kill()
        wait_charged(m, 0, 'once every lock owner is gone')


@case(mount=False, root=True, timeout=60)
def budget_key_documented():
    """`open_fds_per_user` is a key: auto or a number from 2, shown by
    --print-config."""
    require_daemon_here()
    d = ufs.config().daemon
    r = subprocess.run([d, '--print-config', '-o', 'open_fds_per_user=77'],
                       capture_output=True, text=True, timeout=30)
    check('open_fds_per_user = 77' in r.stdout, f'--print-config shows it: {r.stdout[-400:]}')
    tmp = ufs.scratch_dir('budget-key')
    conf = os.path.join(tmp, 'bad.conf')
    with open(conf, 'w') as f:
        f.write('[backing]\nopen_fds_per_user = lots\n')
    try:
        r = subprocess.run([d, '--check-config', conf], capture_output=True, text=True,
                           timeout=30)
        check(r.returncode != 0 and 'open_fds_per_user' in r.stderr,
              f'a bad value is refused by name: {r.returncode} {r.stderr!r}')
        # An open is charged 2 up front (fs_open.c): a share of 1 refused every open.
        with open(conf, 'w') as f:
            f.write('[backing]\nopen_fds_per_user = 1\n')
        r = subprocess.run([d, '--check-config', conf], capture_output=True, text=True,
                           timeout=30)
        check(r.returncode != 0 and 'out of range 2..' in r.stderr,
              f'a share of 1 is refused: {r.returncode} {r.stderr!r}')
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
