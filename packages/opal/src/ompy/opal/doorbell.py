"""Doorbells: datagram sockets that only the processes of this job can ring.

A process about to sleep in the progress engine can be woken by a peer on its node through a
doorbell: the peer sends one byte, the content is ignored.  The socket is a file in the
session directory, which the launcher creates with mode 0700 for the job (or this process
created for itself, also 0700): a process of another user cannot even reach the path, let alone
send to it, so it can neither wake a sleeping rank spuriously nor flood it.  (An address in
Linux's abstract namespace, which needs no file, can be rung by any process of any user on the
host, and every bound name is listed in the world-readable ``/proc/net/unix``.)

A crash leaves the socket file behind in the session directory, which is removed with the job.

Socket paths are limited to 107 bytes; a session directory deep enough to exceed that is
reached through ``/proc/self/fd/<fd of the directory>/<name>`` instead, which Linux resolves
like the long path (:func:`reachable`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from pathlib import Path

from .session import session_dir

#: The longest path ``bind`` and ``sendto`` accept for an AF_UNIX socket (sun_path less its NUL).
SUN_PATH_MAX = 107


class DoorbellError(OSError):
    """A doorbell could not be made (the session directory is unusable)."""


def _check_private(folder: Path) -> None:
    """Refuse a directory other users could reach: the doorbell's protection is its 0700."""
    try:
        info = os.stat(folder)
    except OSError as error:
        raise DoorbellError(
            error.errno, f"cannot use {folder} for doorbell sockets: {error.strerror}"
        ) from error
    if info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise DoorbellError(
            f"refusing to put doorbell sockets in {folder}: it must belong to this user "
            f"(uid {os.geteuid()}) with mode 0700, but belongs to uid {info.st_uid} with mode "
            f"{info.st_mode & 0o777:04o}; other users could ring (flood) them"
        )


class _Directories:
    """Directories opened with ``O_PATH`` to shorten socket paths that are too long."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def short(self, path: str) -> str:
        if len(os.fsencode(path)) <= SUN_PATH_MAX:
            return path
        directory, name = os.path.split(path)
        fd = self._fds.get(directory)
        if fd is None:
            fd = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            self._fds[directory] = fd
        return f"/proc/self/fd/{fd}/{name}"

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


class Doorbell:
    """This process's doorbell (one per user: a BTL, a communicator), and the means to ring
    the doorbells of the job's other processes.

    ``address`` is what peers need (publish it); it is a path in ``directory`` (by default the
    session directory).  ``label`` only makes the file name readable (``btl-sm-3``).
    """

    def __init__(self, label: str, directory: Path | None = None) -> None:
        folder = Path(directory) if directory is not None else session_dir()
        _check_private(folder)
        self.address = str(folder / f"bell-{label}-{os.getpid()}-{secrets.token_hex(6)}")
        self._paths = _Directories()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        try:
            old = os.umask(0o177)  # the socket file itself: 0600, whatever the process umask
            try:
                self.sock.bind(self._paths.short(self.address))
            finally:
                os.umask(old)
        except OSError as error:
            self.sock.close()
            self._paths.close()
            raise DoorbellError(
                error.errno, f"cannot create a doorbell socket at {self.address}: {error.strerror}"
            ) from error
        self.sock.setblocking(False)
        self._bound = True
        self._sendto = self.sock.sendto
        self._recv = self.sock.recv
        self._targets: dict[str, str] = {}

    @property
    def fd(self) -> int:
        return self.sock.fileno()

    def ring(self, address: str) -> None:
        """Wake the process whose doorbell is ``address``; a full or vanished bell is ignored."""
        target = self._targets.get(address)
        if target is None:
            target = self._targets[address] = self._paths.short(address)
        with contextlib.suppress(OSError):  # full: a wake-up is pending; gone: its owner ended
            self._sendto(b"\1", target)

    def drain(self) -> int:
        """Consume every pending ring; how many there were."""
        count = 0
        while True:
            try:
                self._recv(64)
            except (BlockingIOError, InterruptedError):
                return count
            count += 1

    def close(self) -> None:
        """Close the socket and remove its file (idempotent)."""
        if self._bound:
            self._bound = False
            with contextlib.suppress(OSError):
                os.unlink(self.address)
        self.sock.close()
        self._paths.close()
