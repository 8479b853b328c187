# SPDX-License-Identifier: GPL-2.0-or-later
"""A mount under load while its daemon changes: what a hand-over must survive.

Load(mnt, seconds) starts, each in a process of its own:
- fio writing several open files at random with crc32c verification of
  what it wrote (verify_backlog: checked as it goes, and at the end), an
  fsync every 16 writes;
- a metadata loop creating, writing, fsyncing, renaming, stat-ing and
  removing files and directories, timing every call;
- one process holding a POSIX write lock (F_SETLK) and one an flock.
finish() waits for all of them and returns what they saw; locks_held()
asks, from another process, whether both locks are still taken.
"""

import errno
import fcntl
import os
import re
import subprocess
import sys
import time

META = r'''
import os, sys, time
d, seconds = sys.argv[1], float(sys.argv[2])
# Timed: where start-up is slow (the 7.3 guest), a kill may fall in it.
t = time.monotonic()
os.makedirs(d, exist_ok=True)
worst, n, errors = time.monotonic() - t, 0, []
end = time.monotonic() + seconds
class Failed(Exception):
    pass
def timed(fn, *a):
    # One error per round: the calls after it would only fail in its wake.
    global worst
    t = time.monotonic()
    try:
        return fn(*a)
    except OSError as e:
        errors.append((e.errno, f'{time.time():.3f} {fn.__name__}{a}: {e}'))
        raise Failed()
    finally:
        worst = max(worst, time.monotonic() - t)
def clean(*names):
    # Timed too: after an error, the wait for a new daemon may fall here.
    global worst
    for p in names:
        for rm in (os.unlink, os.rmdir):
            t = time.monotonic()
            try:
                rm(p)
            except OSError:
                pass
            worst = max(worst, time.monotonic() - t)
while time.monotonic() < end:
    f, g, sub = f'{d}/f{n % 7}', f'{d}/g{n % 7}', f'{d}/sub{n % 3}'
    try:
        fd = timed(os.open, f, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        try:
            timed(os.write, fd, b'%d\n' % n)
            timed(os.fsync, fd)
        finally:
            os.close(fd)
        timed(os.rename, f, g)
        timed(os.stat, g)
        timed(os.unlink, g)
        timed(os.mkdir, sub)
        timed(os.rmdir, sub)
    except Failed:
        clean(f, g, sub)
    n += 1
print(f'rounds {n} worst {worst:.3f} errnos ' +
      ','.join(str(e) for e in sorted({e for e, _ in errors})))
for _, e in errors[:20]:
    print('error', e)
sys.exit(1 if errors else 0)
'''

HOLD = r'''
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
if sys.argv[2] == 'posix':
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
else:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print('locked', flush=True)
sys.stdin.read()
os.close(fd)
'''


class Load:
    def __init__(self, mnt, seconds, fio_jobs=3):
        self.mnt, self.seconds = mnt, seconds
        py = sys.executable
        self.fio = subprocess.Popen(
            ['fio', '--name=handover', f'--directory={mnt}', '--rw=randwrite', '--bs=4k',
             '--size=2M', f'--numjobs={fio_jobs}', '--time_based', f'--runtime={seconds}',
             '--verify=crc32c', '--verify_backlog=64', '--verify_fatal=1', '--do_verify=1',
             '--ioengine=psync', '--fsync=16', '--group_reporting', '--verify_state_save=0',
             '--continue_on_error=io'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.meta = subprocess.Popen([py, '-c', META, f'{mnt}/meta', str(seconds)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.holders = []
        for kind in ('posix', 'flock'):
            p = subprocess.Popen([py, '-c', HOLD, f'{mnt}/lock-{kind}', kind],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            line = p.stdout.readline().strip()
            if line != 'locked':
                raise AssertionError(f'the {kind} lock holder did not lock: {line!r}')
            self.holders.append(p)

    def locks_held(self):
        """(posix, flock): does another process find each lock taken?"""
        held = []
        for kind in ('posix', 'flock'):
            fd = os.open(f'{self.mnt}/lock-{kind}', os.O_RDWR)
            try:
                if kind == 'posix':
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                else:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held.append(False)
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                held.append(True)
            finally:
                os.close(fd)
        return tuple(held)

    def finish(self, timeout=None):
        """Wait for fio and the loop; let the holders go.  Returns a dict."""
        timeout = timeout or self.seconds + 120
        out = {}
        fio_out, _ = self.fio.communicate(timeout=timeout)
        out['fio_rc'] = self.fio.returncode
        out['fio_tail'] = '\n'.join(fio_out.strip().split('\n')[-12:])
        out['fio_verify_errors'] = fio_out.count('verify:') + fio_out.count('bad magic') + \
            fio_out.count('crc32c')
        out['fio_errnos'] = sorted({int(x) for x in re.findall(r'err=\s*(\d+)', fio_out)} - {0})
        meta_out, _ = self.meta.communicate(timeout=timeout)
        out['meta_rc'] = self.meta.returncode
        out['meta'] = meta_out.strip()
        words = meta_out.split()
        out['meta_worst'] = float(words[words.index('worst') + 1]) if 'worst' in words else None
        errnos = words[words.index('errnos') + 1] if 'errnos' in words[:-1] else ''
        out['meta_errnos'] = sorted(int(x) for x in errnos.split(',') if x.isdigit())
        for p in self.holders:
            p.stdin.close()
            p.wait(timeout=30)
        out['holders_rc'] = [p.returncode for p in self.holders]
        return out

    def kill(self):
        for p in [self.fio, self.meta] + self.holders:
            if p.poll() is None:
                p.kill()
                p.wait()


def wait_for(pred, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()
