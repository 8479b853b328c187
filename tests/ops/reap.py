#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Run a command and learn how the daemons it leaves behind end.

Usage: reap.py STATUSFILE COMMAND [ARG...]

This process becomes a child subreaper (PR_SET_CHILD_SUBREAPER), so a
daemon that COMMAND starts and that detaches is re-parented to it rather
than to init, and its exit status can be collected.  Appends to STATUSFILE
"command STATUS" when COMMAND ends and "orphan PID STATUS" when such a
daemon ends (STATUS as in the shell: 128+N after signal N).  Exits when no
child is left.
"""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def shell_status(status):
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 else code


def main():
    status_path, argv = sys.argv[1], sys.argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0):
        sys.exit(f'reap.py: prctl: {os.strerror(ctypes.get_errno())}')
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    while True:
        try:
            child, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        with open(status_path, 'a', encoding='utf-8') as f:
            if child == pid:
                print('command', shell_status(status), file=f)
            else:
                print('orphan', child, shell_status(status), file=f)


if __name__ == '__main__':
    sys.exit(main())
