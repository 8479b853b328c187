# SPDX-License-Identifier: GPL-2.0-or-later
"""The control file (.uringfs) read by many users of an allow_other mount.

The requests in flight name a caller's process, uid and node: an ordinary
user sees only its own, with how many of others' were withheld; root and the
daemon's own user see them all.  Each open holds a snapshot of the text, so
an ordinary user holds at most 8 opens at once (EMFILE past them) and all
ordinary users together 64 (ENFILE); root is never refused
(fs_control_state.h)."""

import errno
import fcntl
import os
import re
import resource
import subprocess

import ufs
from ufs import case, check, check_eq
from t_handover import empty_config
from t_slow import LOCKER, finish, of_pid, spawn, until

USER_OPENS = 8          # UFS_CONTROL_USER_OPENS
OPENS = 64              # UFS_CONTROL_OPENS
NOBODY = 65534
FLOOD = 10000           # opens one user tries: 48 MB of snapshots without the bound


def read_control(m, user=None):
    """The control file read (as user, if given): ({name: value}, [its
    'inflight ...' lines without the prefix])."""
    path = f'{m.mnt}/{ufs.CONTROL}'
    text = ufs.as_user(ufs.read_file, path, user=user) if user is not None else \
        ufs.read_file(path)
    values, listed = {}, []
    for line in text.decode().splitlines():
        name, _, value = line.partition(' ')
        if name == 'inflight':
            listed.append(value)
        else:
            values[name] = value
    return values, listed


def locked_file(m):
    """A file anyone may lock (posix_locks=on), and root's holder of its lock."""
    path = f'{m.src}/locked'
    ufs.write_file(path, b'data')
    os.chmod(path, 0o666)
    holder = spawn(LOCKER, f'{m.mnt}/locked')
    check_eq(holder.stdout.readline().strip(), 'locked', 'the lock holder')
    return holder


def lock_waiter(chan, path):
    """Child: wait for a write lock on all of path (F_SETLKW); killed, or
    told to go once it has it."""
    fd = os.open(path, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    chan.send('locked')
    chan.recv(timeout=120)
    os.close(fd)
    return 0


@case(mount=False, root=True, user=True)
def others_requests_withheld():
    """On an allow_other mount, ufs-test reads the control file while its own
    lock wait and root's are in flight: it is shown its own (uid, pid), not
    root's, and inflight_withheld counts root's; the gauges stay the mount's.
    Root sees both, with no withheld line.  `--stats --in-flight` run by
    ufs-test lists its own and says on stderr how many it did not."""
    withheld_case('allow_other,posix_locks=on')


@case(mount=False, root=True, user=True)
def others_requests_withheld_with_idmap():
    """The same with idmap=on, where the kernel sends no ids in an OPEN or a
    SETLKW: the daemon reads the calling thread's own (dispatch.c), for the
    reader of the control file and for each request listed."""
    withheld_case('allow_other,posix_locks=on,idmap=on')


def withheld_case(opts):
    ufs.require_daemon('the control file is the daemon\'s')
    pw = ufs.test_user()
    with ufs.Mount(opts=opts) as m:
        if 'idmap=on' in opts and m.stats().get('idmap') != 'on':
            raise ufs.Skip(f'idmap: {m.stats().get("idmap_reason")}')
        holder = locked_file(m)
        waiters = []
        try:
            waiters.append(ufs.Child(lock_waiter, f'{m.mnt}/locked'))
            waiters.append(ufs.Child(lock_waiter, f'{m.mnt}/locked', user=ufs.TEST_USER))
            root_w, user_w = waiters
            until('both lock waits in flight', lambda: all(
                of_pid(read_control(m)[1], w.pid) for w in waiters))

            values, listed = read_control(m, user=ufs.TEST_USER)
            check_eq(of_pid(listed, root_w.pid), [], 'root\'s request shown to ufs-test')
            mine = of_pid(listed, user_w.pid)
            check(len(mine) == 1 and mine[0].startswith('SETLKW ')
                  and f' uid={pw.pw_uid} ' in mine[0], f'ufs-test\'s own request: {listed}')
            check(all(f' uid={pw.pw_uid} ' in line for line in listed),
                  f'another uid\'s request shown to ufs-test: {listed}')
            withheld = int(values.get('inflight_withheld', -1))
            check(withheld >= 1, f'inflight_withheld for ufs-test: {withheld}')
            check_eq(int(values['inflight_requests']), len(listed) + withheld,
                     'inflight_requests (the mount\'s) = listed + withheld')

            values, listed = read_control(m)
            check('inflight_withheld' not in values, 'a withheld line for root')
            check(of_pid(listed, root_w.pid) and of_pid(listed, user_w.pid),
                  f'root sees both requests: {listed}')

            got = subprocess.run([ufs.user_daemon(m.daemon), '--stats', m.mnt, '--in-flight'],
                                 capture_output=True, text=True, timeout=30, user=pw.pw_uid,
                                 group=pw.pw_gid, extra_groups=[])
            check_eq(got.returncode, 0, f'--stats --in-flight as ufs-test ({got.stderr})')
            lines = got.stdout.splitlines()
            check(of_pid(lines, user_w.pid) and not of_pid(lines, root_w.pid),
                  f'--stats --in-flight as ufs-test: {lines}')
            check('requests of other users not listed: ' in got.stderr,
                  f'no word of the withheld requests: {got.stderr!r}')
        finally:
            for w in waiters:
                w.kill()
            finish(holder, 'the lock holder')


@case(mount=False, root=True, user=True)
def owner_sees_every_request():
    """A daemon run by ufs-test (allow_other): its own user sees root's
    request in flight; nobody sees none of it, only the count."""
    ufs.require_daemon('the daemon must run as the ordinary user')
    if not ufs.as_user(os.access, '/dev/fuse', os.R_OK | os.W_OK):
        raise ufs.Skip(f'{ufs.TEST_USER} cannot open /dev/fuse')
    with ufs.user_allow_other(), \
            ufs.Mount(user=ufs.TEST_USER, opts='allow_other,posix_locks=on') as m:
        ufs.as_user(ufs.write_file, f'{m.mnt}/locked', b'data')
        ufs.as_user(os.chmod, f'{m.mnt}/locked', 0o666)
        holder = spawn(LOCKER, f'{m.mnt}/locked')
        waiter = None
        try:
            check_eq(holder.stdout.readline().strip(), 'locked', 'the lock holder')
            waiter = ufs.Child(lock_waiter, f'{m.mnt}/locked')
            until('root\'s lock wait in flight for the owner', lambda: of_pid(
                read_control(m, user=ufs.TEST_USER)[1], waiter.pid))
            values, _ = read_control(m, user=ufs.TEST_USER)
            check('inflight_withheld' not in values, 'a withheld line for the owner')
            values, listed = read_control(m, user=NOBODY)
            check_eq(listed, [], 'requests shown to nobody')
            check(int(values.get('inflight_withheld', 0)) >= 1,
                  f'inflight_withheld for nobody: {values.get("inflight_withheld")}')
        finally:
            if waiter:
                waiter.kill()
            finish(holder, 'the lock holder')


def rss_kib(pid):
    return int(ufs.proc_status(pid, 'VmRSS').split()[0])


def flood(chan, path, tries):
    """Child: open path up to tries times, holding what opens; report
    (opened, {errno: count}), close all when told."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fds, errors = [], {}
    for _ in range(min(tries, hard - 64)):
        try:
            fds.append(os.open(path, os.O_RDONLY))
        except OSError as e:
            errors[e.errno] = errors.get(e.errno, 0) + 1
    chan.send((len(fds), errors))
    chan.recv(timeout=120)
    for fd in fds:
        os.close(fd)
    return 0


def many_users(chan, path, uids, per_uid):
    """Child (root): per_uid opens of path as each of uids (seteuid: the
    FUSE request carries it); report [(opened, [errno...]) per uid], close
    all when told."""
    fds, got = [], []
    for uid in uids:
        os.seteuid(uid)
        errs = []
        for _ in range(per_uid):
            try:
                fds.append(os.open(path, os.O_RDONLY))
            except OSError as e:
                errs.append(e.errno)
        os.seteuid(0)
        got.append((per_uid - len(errs), errs))
    chan.send(got)
    chan.recv(timeout=120)
    for fd in fds:
        os.close(fd)
    return 0


def settled(m, want):
    """control_opens reaches want (RELEASE follows close(2) asynchronously)."""
    until(f'control_opens {want}', lambda: m.stats()['control_opens'] == want)


@case(mount=False, root=True, user=True, timeout=180)
def opens_bounded():
    """ufs-test opens the control file FLOOD times, holding each: 8 open,
    the rest get EMFILE, and the daemon does not grow by their snapshots.
    Root still reads the counters (control_opens 8, the refusals counted).
    Seven more users fill the 64 of all ordinary users: the next user gets
    ENFILE, root still reads.  Once closed, ufs-test opens again."""
    ufs.require_daemon('the control file is the daemon\'s')
    with ufs.Mount(opts='allow_other') as m:
        path = f'{m.mnt}/{ufs.CONTROL}'
        ufs.read_file(path)
        before = rss_kib(m.pid)
        with ufs.Child(flood, path, FLOOD, user=ufs.TEST_USER) as c:
            opened, errors = c.recv(timeout=150)
            grown = rss_kib(m.pid) - before
            print(f'# ufs-test: {opened} open, refused {errors}, daemon RSS +{grown} KiB')
            check_eq((opened, set(errors)), (USER_OPENS, {errno.EMFILE}),
                     'ufs-test\'s opens held, and the errors of the others')
            check(grown < 8 * 1024, f'the daemon grew by {grown} KiB for one user\'s opens')
            stats = m.stats()
            check_eq(stats['control_opens'], USER_OPENS, 'control_opens')
            check(stats['control_opens_refused'] >= sum(errors.values()),
                  f'control_opens_refused {stats["control_opens_refused"]}')
            pw = ufs.test_user()
            got = subprocess.run([ufs.user_daemon(m.daemon), '--stats', m.mnt],
                                 capture_output=True, text=True, timeout=30, user=pw.pw_uid,
                                 group=pw.pw_gid, extra_groups=[])
            check(got.returncode != 0 and 'too many opens of the control file by this user'
                  in got.stderr, f'--stats as ufs-test at its bound says why: {got.stderr!r}')

            uids = list(range(61000, 61000 + OPENS // USER_OPENS))
            with ufs.Child(many_users, path, uids, USER_OPENS) as others:
                got = others.recv(timeout=60)
                check_eq(got[:-1], [(USER_OPENS, [])] * (len(uids) - 1),
                         'seven more users\' opens')
                check_eq(got[-1], (0, [errno.ENFILE] * USER_OPENS),
                         'a user\'s opens past all ordinary users\' bound')
                check_eq(m.stats()['control_opens'], OPENS, 'control_opens at the bound')
                check('transport' in read_control(m)[0], 'root reads the counters')
                others.send('close')
                others.join()
            c.send('close')
            c.join()
        settled(m, 0)
        check('transport' in read_control(m, user=ufs.TEST_USER)[0],
              'ufs-test reads the counters again')


def hold_open(chan, path):
    """Child: hold path open; on each message read it whole from offset 0
    (pread) and send the text; return when told 'close'."""
    fd = os.open(path, os.O_RDONLY)
    chan.send('open')
    try:
        while chan.recv(timeout=120) != 'close':
            text, off = b'', 0
            while chunk := os.pread(fd, 65536, off):
                text, off = text + chunk, off + len(chunk)
            chan.send(text.decode())
    finally:
        os.close(fd)
    return 0


@case(mount=False, root=True, user=True, timeout=120)
def open_across_takeover():
    """ufs-test holds the control file open while a new daemon takes the
    mount over: the successor counts that open (control_opens 1) and its
    fresh snapshot is still ufs-test's own (inflight_withheld, not the whole
    list)."""
    ufs.require_daemon('hand-over is the daemon\'s')
    with ufs.Mount(opts='allow_other') as m:
        with ufs.Child(hold_open, f'{m.mnt}/{ufs.CONTROL}', user=ufs.TEST_USER) as c:
            check_eq(c.recv(), 'open', 'ufs-test\'s open')
            check_eq(m.stats()['control_opens'], 1, 'control_opens before the take-over')
            old = m.proc
            cmd = [m.daemon, '-f', '--config', empty_config(), '--take-over', m.mnt]
            with open(m.log, 'ab') as log:
                m.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                          stderr=subprocess.STDOUT, start_new_session=True)
            check_eq(old.wait(timeout=60), 0, 'the old daemon\'s exit status' + m.log_tail())
            until('the successor serves', lambda: m.stats()['restarts'] == 1)
            check_eq(m.stats()['control_opens'], 1, 'control_opens after the take-over')
            c.send('read')
            text = c.recv()
            check(re.search(r'^inflight_withheld \d+$', text, re.M),
                  f'ufs-test\'s snapshot after the take-over:\n{text[-600:]}')
            c.send('close')
            c.join()
        settled(m, 0)
