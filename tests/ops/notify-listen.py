#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Play systemd's side of sd_notify(3) for tests/ops/notify.sh.

Usage: notify-listen.py SOCKET MOUNTPOINT LOG
       notify-listen.py --check MOUNTPOINT

Binds the datagram socket SOCKET and appends every line of every message
to LOG as "msg LINE".  The moment a message with READY=1 arrives, and
before reading the next one, it checks that MOUNTPOINT is a uringfs mount
that answers statfs(2) and a read of its control file, and logs
"ready-check ok" or "ready-check fail WHY".  It exits after STOPPING=1, or
after 60 seconds without a message.  With --check it only prints the
outcome of that check, now.
"""
import os
import socket
import subprocess
import sys


def mount_type(path):
    """The file system type mounted at path (the top one), or None."""
    real = os.path.realpath(path)
    fstype = None
    with open('/proc/self/mountinfo', encoding='utf-8') as f:
        for line in f:
            fields = line.split()
            if fields[4] == real:
                fstype = fields[fields.index('-') + 1]
    return fstype


def ready_check(mountpoint):
    fstype = mount_type(mountpoint)
    if fstype != 'fuse.uringfs':
        return f'fail {mountpoint} is {fstype or "not a mount point"}'
    # In child processes with a deadline: a mount that does not answer yet
    # would block these calls, not fail them.
    try:
        subprocess.run(['stat', '-f', mountpoint], check=True, timeout=3,
                       stdout=subprocess.DEVNULL)
        control = subprocess.run(['cat', os.path.join(mountpoint, '.uringfs')],
                                 check=True, timeout=3, capture_output=True, text=True)
    except subprocess.TimeoutExpired as e:
        return f'fail {" ".join(e.cmd)} did not return within 3 s'
    except subprocess.CalledProcessError as e:
        return f'fail {" ".join(e.cmd)} exited {e.returncode}'
    if not control.stdout.startswith('transport '):
        return 'fail the control file does not start with "transport "'
    return 'ok'


def main():
    if sys.argv[1] == '--check':
        result = ready_check(sys.argv[2])
        print(result)
        return 0 if result == 'ok' else 1
    path, mountpoint, log_path = sys.argv[1:4]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(60)
    with open(log_path, 'a', encoding='utf-8') as log:
        while True:
            try:
                data = sock.recv(4096)
            except socket.timeout:
                print('timeout', file=log, flush=True)
                return 1
            lines = data.decode('utf-8', 'replace').splitlines()
            for line in lines:
                print('msg', line, file=log, flush=True)
            if 'READY=1' in lines:
                print('ready-check', ready_check(mountpoint), file=log, flush=True)
            if 'STOPPING=1' in lines:
                return 0


if __name__ == '__main__':
    sys.exit(main())
