# SPDX-License-Identifier: GPL-2.0-or-later
"""systemd's part in a service's life, played by a test: no systemd needed.

What a Type=notify service with FileDescriptorStoreMax= sees of systemd,
after sd_notify(3), sd_pid_notify_with_fds(3) and sd_listen_fds(3):

- NOTIFY_SOCKET, a datagram socket that takes READY=1, STATUS=, STOPPING=1,
  MAINPID=, FDSTORE=1 with FDNAME= and the descriptors (SCM_RIGHTS),
  FDSTOREREMOVE=1 with FDNAME=;
- the file descriptor store: descriptors kept across the service's deaths,
  each dropped when it reports POLLHUP or POLLERR (systemd's default,
  FDPOLL=1) or is removed by name;
- a start with the store handed over: descriptors from 3 on, LISTEN_FDS,
  LISTEN_FDNAMES (colon-separated), LISTEN_PID = the service's own pid.

Service(argv).start() runs the service; kill(SIGKILL) and start() again is
Restart= after a crash.  Everything runs on one thread of the caller's.
"""

import array
import ctypes
import os
import select
import signal
import socket
import subprocess
import threading
import time


_libc = ctypes.CDLL(None, use_errno=True)
_SYS_KCMP = {'x86_64': 312, 'aarch64': 272}.get(os.uname().machine, 312)


class Service:
    def __init__(self, argv, env=None):
        self.argv = list(argv)
        self.env = dict(os.environ if env is None else env)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addr = '\0ufs-fake-systemd-%d-%d' % (os.getpid(), id(self))
        self.sock.bind(self.addr)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.store = []          # [name, fd], in the order stored
        self.proc = None
        self.ready = threading.Event()
        self.status = ''
        self.messages = []       # every message, for the test to read
        self.starts = 0
        self.lock = threading.Lock()
        self._stop = False
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    # ---- the notify socket and the store ----

    def _take(self, text, fds):
        fields = {}
        for line in text.split('\n'):
            key, _, value = line.partition('=')
            if key:
                fields[key] = value
        with self.lock:
            self.messages.append(text)
            if fields.get('FDSTORE') == '1':
                name = fields.get('FDNAME', 'stored')
                for fd in fds:
                    if any(self._same(fd, f) for _, f in self.store):
                        os.close(fd)   # systemd keeps one copy of a descriptor
                    else:
                        self.store.append([name, fd])
                fds = []
            if fields.get('FDSTOREREMOVE') == '1':
                name = fields.get('FDNAME', '')
                for entry in [e for e in self.store if e[0] == name]:
                    os.close(entry[1])
                    self.store.remove(entry)
            if 'STATUS' in fields:
                self.status = fields['STATUS']
            if fields.get('READY') == '1':
                self.ready.set()
        for fd in fds:
            os.close(fd)

    @staticmethod
    def _same(a, b):
        """One open file description (kcmp KCMP_FILE), as systemd's same_fd()."""
        pid = os.getpid()
        return _libc.syscall(_SYS_KCMP, pid, pid, 0, a, b) == 0

    def _serve(self):
        while not self._stop:
            with self.lock:
                watched = [fd for _, fd in self.store]
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            for fd in watched:
                poller.register(fd, 0)          # HUP and ERR only, as systemd
            for fd, ev in poller.poll(100):
                if fd == self.sock.fileno():
                    self._recv()
                elif ev & (select.POLLHUP | select.POLLERR):
                    with self.lock:
                        for entry in [e for e in self.store if e[1] == fd]:
                            os.close(fd)
                            self.store.remove(entry)

    def _recv(self):
        fds = array.array('i')
        try:
            msg, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(253 * fds.itemsize) +
                                               socket.CMSG_SPACE(12))
        except BlockingIOError:
            return
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        self._take(msg.decode(errors='replace'), list(fds))

    def names(self):
        with self.lock:
            return [name for name, _ in self.store]

    # ---- the service ----

    def start(self, argv=None):
        """Start the service with the store handed over (Restart=, or a start)."""
        if argv is not None:
            self.argv = list(argv)
        self.ready.clear()
        with self.lock:
            stored = [(name, os.dup(fd)) for name, fd in self.store]
        env = dict(self.env, NOTIFY_SOCKET='@' + self.addr[1:])
        env.pop('LISTEN_FDS', None)
        env.pop('LISTEN_FDNAMES', None)
        if stored:
            env['LISTEN_FDS'] = str(len(stored))
            env['LISTEN_FDNAMES'] = ':'.join(name for name, _ in stored)

        # A small exec wrapper puts them at 3.. and LISTEN_PID = its own pid,
        # which exec keeps: as systemd does between fork and exec.
        wrapper = ('import fcntl, os, sys\n'
                   'fds = [int(x) for x in sys.argv[1].split(",") if x]\n'
                   'high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 1000) for fd in fds]\n'
                   'for fd in fds:\n'
                   '    os.close(fd)\n'
                   'for i, fd in enumerate(high):\n'
                   '    os.dup2(fd, 3 + i, inheritable=True)\n'
                   'os.environ["LISTEN_PID"] = str(os.getpid())\n'
                   'os.execvp(sys.argv[2], sys.argv[2:])\n')
        fdlist = ','.join(str(fd) for _, fd in stored)
        cmd = ['/usr/bin/python3', '-c', wrapper, fdlist] + self.argv
        self.proc = subprocess.Popen(cmd, env=env, pass_fds=[fd for _, fd in stored],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _, fd in stored:
            os.close(fd)
        self.starts += 1
        return self.proc

    def wait_ready(self, timeout):
        """READY=1 within timeout; False if the service died first or took longer."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.ready.wait(0.05):
                return True
            if self.proc.poll() is not None:
                return self.ready.is_set()
        return False

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)

    def stderr(self):
        """What the service wrote to stderr (once it has exited)."""
        try:
            return self.proc.stderr.read().decode(errors='replace')
        except (ValueError, OSError):
            return ''

    def close(self):
        """The unit goes away: the store is released."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stop = True
        self._thread.join()
        with self.lock:
            for _, fd in self.store:
                os.close(fd)
            self.store = []
        self.sock.close()
