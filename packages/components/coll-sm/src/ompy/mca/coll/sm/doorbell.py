"""Waking a rank that sleeps in the progress engine: a doorbell socket and a heavy fence.

A rank whose wait outlasts the engine's spin budget raises its SLEEPING word, issues the heavy
side of an asymmetric fence and checks its condition once more before it blocks on its doorbell
(an abstract-namespace datagram socket: no file to leave behind).  A rank that stores a counter
then looks at the SLEEPING words and rings the sleepers' doorbells.  Storing "sleeping" and then
loading a counter (and the converse on the other side) is the one store-load pair that even
x86-64 may reorder; the heavy side of an asymmetric fence on the rare, sleeping side
(:class:`ompy.opal.membarrier.Fence`) orders it without a fence on the fast path.  Without
membarrier a missed ring costs at most the engine's longest sleep (``opal_progress_block_max_ms``).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket


class Doorbell:
    """This rank's doorbell for one communicator, and the means to ring its peers'."""

    def __init__(self, jobid: str, rank: int) -> None:
        self.address = f"\0ompy-{jobid}-coll-sm-{rank}-{os.getpid()}-{secrets.token_hex(6)}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(self.address)
        self.sock.setblocking(False)

    @property
    def fd(self) -> int:
        return self.sock.fileno()

    def ring(self, address: str) -> None:
        """Wake the rank listening at ``address``; a full (wake-up pending) or gone bell is fine."""
        with contextlib.suppress(OSError):
            self.sock.sendto(b"\1", address)

    def drain(self) -> None:
        """Consume every pending ring."""
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while True:
                self.sock.recv(64)

    def close(self) -> None:
        self.sock.close()
