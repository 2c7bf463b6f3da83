"""Alltoall(v): pairwise exchange, linear, Bruck.

``outgoing(i)`` and ``incoming(i)`` are the blocks for and from rank ``i`` (for ``IN_PLACE``
the module passes a snapshot of the data to send).

- ``pairwise``: ``p-1`` steps; in step ``k`` send to ``rank+k`` and receive from ``rank-k``, so
  one message per link at a time (long messages).
- ``linear``: every send and receive posted at once (medium messages: the transport overlaps
  them, at the price of ``2(p-1)`` requests in flight).
- ``bruck``: ``ceil(log2 p)`` steps, each moving about half of the blocks, packed into one
  message (short messages, where the number of messages dominates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Rounds, Workspace

Block = Callable[[int], memoryview]


def pairwise(comm: Any, tag: int, ws: Workspace, outgoing: Block, incoming: Block) -> Rounds:
    """Step ``k``: send to ``rank + k``, receive from ``rank - k``."""
    rank, size = comm.rank, comm.size
    copy(incoming(rank), outgoing(rank))
    for step in range(1, size):
        to, frm = (rank + step) % size, (rank - step) % size
        yield (send(comm, outgoing(to), to, tag), recv(comm, incoming(frm), frm, tag))


def linear(comm: Any, tag: int, ws: Workspace, outgoing: Block, incoming: Block) -> Rounds:
    """Every exchange posted at once, receives first, peers in ring order from ``rank + 1``."""
    rank, size = comm.rank, comm.size
    copy(incoming(rank), outgoing(rank))
    if size == 1:
        return
    peers = [(rank + step) % size for step in range(1, size)]
    requests = [recv(comm, incoming(peer), peer, tag) for peer in peers]
    requests.extend(send(comm, outgoing(peer), peer, tag) for peer in peers)
    yield requests


def bruck(comm: Any, tag: int, ws: Workspace, outgoing: Block, incoming: Block) -> Rounds:
    """Bruck's algorithm for equal blocks: rotate, ``log2 p`` packed exchanges, rotate back.

    Scratch block ``i`` starts as the block for rank ``rank + i``; in the step of distance
    ``d`` every block whose index has bit ``d`` set travels to ``rank + d``.  At the end
    scratch block ``i`` holds the block from rank ``rank - i``.
    """
    rank, size = comm.rank, comm.size
    width = outgoing(0).nbytes
    if size == 1 or width == 0:
        copy(incoming(rank), outgoing(rank))
        return
    work = ws.get(0, size * width)
    for index in range(size):
        copy(work[index * width : (index + 1) * width], outgoing((rank + index) % size))
    distance = 1
    while distance < size:
        moving = [index for index in range(size) if index & distance]
        packed = ws.get(1, len(moving) * width)
        unpacked = ws.get(2, len(moving) * width)
        for slot, index in enumerate(moving):
            copy(packed[slot * width : (slot + 1) * width], work[index * width :][:width])
        yield (
            send(comm, packed, (rank + distance) % size, tag),
            recv(comm, unpacked, (rank - distance) % size, tag),
        )
        for slot, index in enumerate(moving):
            copy(work[index * width :][:width], unpacked[slot * width :][:width])
        distance <<= 1
    for index in range(size):
        copy(incoming((rank - index) % size), work[index * width : (index + 1) * width])
