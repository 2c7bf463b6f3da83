"""A rank that a daemon started on its node, as the launcher's runner sees it.

The runner waits for exits on file descriptors: each remote rank has an eventfd that the
daemon server makes readable when the daemon reports the exit, or when the daemon is lost
(then the rank counts as killed with it and :meth:`RemoteRank.starter_failure` names the host).
Its stdout and stderr arrive as messages that the server writes into the pipes the iof
module reads (:class:`Sink`).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

import attrs

from ompy.orte.mca.plm import RankProcess, StarterFailure


@attrs.define(eq=False)
class Sink:
    """Where one of a rank's streams goes: a non-blocking pipe and what waits to be written."""

    fd: int
    pending: bytearray = attrs.field(factory=bytearray)
    eof: bool = False
    closed: bool = False

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            os.close(self.fd)


class RemoteRank(RankProcess):
    """A rank started by a daemon (see the module documentation)."""

    def __init__(
        self,
        rank: int,
        pid: int,
        send_signal: Callable[[int], None],
        sinks: dict[int, Sink],
    ) -> None:
        self.rank = rank
        self.pid = pid
        self.sinks = sinks
        self._send_signal = send_signal
        self._lock = threading.Lock()
        self._exit_fd: int | None = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        self._status: int | None = None
        self._starter: StarterFailure | None = None

    # -- RankProcess (the runner's thread) ----------------------------------------------------

    def exit_fd(self) -> int | None:
        return self._exit_fd

    def poll(self) -> int | None:
        return self._status

    def signal(self, signum: int) -> None:
        if self._starter is None:  # a lost daemon's ranks are beyond reach
            self._send_signal(signum)

    def release(self) -> None:
        with self._lock:
            if self._exit_fd is not None:
                os.close(self._exit_fd)
                self._exit_fd = None

    def starter_failure(self) -> StarterFailure | None:
        return self._starter

    # -- reports (the daemon server's thread) -------------------------------------------------

    def exited(self, status: int) -> None:
        if self._status is None:
            self._status = status
            self._notify()

    def daemon_lost(self, message: str) -> None:
        """The daemon that ran this rank is gone, and the rank with it (PDEATHSIG)."""
        if self._status is not None:
            return
        self._starter = StarterFailure(f"{message}; its ranks died with it", 1)
        self._status = -signal.SIGKILL
        for sink in self.sinks.values():
            sink.pending.clear()
            sink.close()
        self._notify()

    def _notify(self) -> None:
        with self._lock:
            if self._exit_fd is not None:
                os.eventfd_write(self._exit_fd, 1)
