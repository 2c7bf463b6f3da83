"""A rank forked by the fork server, as the launcher's plm interface sees it."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import TYPE_CHECKING

from ompy.orte.mca.plm import RankProcess, StarterFailure

from . import wire

if TYPE_CHECKING:
    from .client import ForkServerClient


class ForkedRank(RankProcess):
    """A rank forked by the server; its exit status arrives through its status pipe."""

    def __init__(
        self, rank: int, pid: int, status_fd: int, server: ForkServerClient | None = None
    ) -> None:
        self.rank = rank
        self.pid = pid
        self._status_fd: int | None = status_fd
        self._returncode: int | None = None
        self._server = server
        self._server_died = False

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
                self._server_died = True
        return self._returncode

    def starter_failure(self) -> StarterFailure | None:
        """The fork server's death, when the status pipe closed without a status."""
        if not self._server_died:
            return None
        if self._server is None:
            return StarterFailure("the fork server that started the ranks died", 1)
        return self._server.death()

    def signal(self, signum: int) -> None:
        """Signal the rank's process group; just the rank while it has no group yet.

        The server reports a rank as soon as it is forked; its first act is to lead a new
        session, and until then the only process that could receive the signal is the rank
        itself (it has started nothing yet).
        """
        try:
            os.killpg(self.pid, signum)
        except ProcessLookupError:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                if self._returncode is None:
                    os.kill(self.pid, signum)
        except PermissionError:
            pass

    def release(self) -> None:
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None
