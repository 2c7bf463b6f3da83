"""A rank forked by the fork server, as the launcher's plm interface sees it."""

from __future__ import annotations

import contextlib
import os
import signal

from ompy.orte.mca.plm import RankProcess

from . import wire


class ForkedRank(RankProcess):
    """A rank forked by the server; its exit status arrives through its status pipe."""

    def __init__(self, rank: int, pid: int, status_fd: int) -> None:
        self.rank = rank
        self.pid = pid
        self._status_fd: int | None = status_fd
        self._returncode: int | None = None

    def exit_fd(self) -> int | None:
        return self._status_fd

    def poll(self) -> int | None:
        if self._returncode is None and self._status_fd is not None:
            try:
                data = os.read(self._status_fd, wire.STATUS.size)
            except BlockingIOError:
                return None
            if len(data) == wire.STATUS.size:
                (self._returncode,) = wire.STATUS.unpack(data)
            else:  # the server died without reporting: its death signal killed the rank
                self._returncode = -signal.SIGKILL
        return self._returncode

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def release(self) -> None:
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None
