"""The doorbell: a datagram socket a sleeping process is woken through.

A process about to block in the progress engine raises "sleeping" flags in its segment; a
sender that publishes a record and sees the flag sends one byte here.  The content is ignored
(anyone who can reach the address can at most cause a spurious wake-up), so Linux's abstract
socket namespace is used: there is no file to leave behind after a crash.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket


class Doorbell:
    """This process's doorbell and the means to ring other processes' doorbells."""

    def __init__(self, jobid: str, rank: int) -> None:
        self.address = f"\0ompy-{jobid}-btl-sm-{rank}-{os.getpid()}-{secrets.token_hex(4)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.address)
        self.sock.setblocking(False)
        self._sendto = self.sock.sendto
        self._recv = self.sock.recv

    @property
    def fd(self) -> int:
        return self.sock.fileno()

    def ring(self, address: str) -> None:
        """Wake the process listening at ``address``; a full or vanished bell is ignored."""
        with contextlib.suppress(OSError):  # full: a wake-up is pending; gone: pidfd reports it
            self._sendto(b"\1", address)

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
        self.sock.close()
