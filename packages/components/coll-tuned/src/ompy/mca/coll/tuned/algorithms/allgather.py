"""Allgather: ring, recursive doubling, Bruck, neighbor exchange; allgatherv: ring.

Every function receives the receive buffer with this rank's block already in place.  The
regular algorithms see it as ``p`` consecutive blocks of ``n`` bytes (``blocks(a, b)`` is the
run ``a .. b-1``), which lets them move runs of blocks in one message.

- ``ring``: ``p-1`` steps, one block each; any block layout (allgatherv too).
- ``recursive_doubling``: ``log2 p`` steps, doubling runs; ``p`` a power of two.
- ``bruck``: ``ceil(log2 p)`` steps for any ``p``, through a rotated scratch buffer (short
  messages, where the steps matter more than the final copy).
- ``neighbor_exchange``: ``p/2`` steps of two blocks with alternating neighbours; ``p`` even.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Rounds, Workspace

Blocks = Callable[[int, int], memoryview]


def ring(comm: Any, tag: int, ws: Workspace, block: Callable[[int], memoryview]) -> Rounds:
    """Step ``k`` passes to the right the block received from the left in step ``k-1``."""
    rank, size = comm.rank, comm.size
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        yield (
            send(comm, block((rank - step) % size), right, tag),
            recv(comm, block((rank - step - 1) % size), left, tag),
        )


def recursive_doubling(comm: Any, tag: int, ws: Workspace, blocks: Blocks) -> Rounds:
    """Exchange the aligned run of ``2^k`` blocks held with ``rank xor 2^k``."""
    rank, size = comm.rank, comm.size
    mask = 1
    while mask < size:
        partner = rank ^ mask
        mine, theirs = rank & ~(mask - 1), partner & ~(mask - 1)
        yield (
            send(comm, blocks(mine, mine + mask), partner, tag),
            recv(comm, blocks(theirs, theirs + mask), partner, tag),
        )
        mask <<= 1


def bruck(comm: Any, tag: int, ws: Workspace, blocks: Blocks) -> Rounds:
    """Bruck: in step ``k`` send the first ``2^k`` gathered blocks to ``rank - 2^k``.

    Scratch block ``i`` holds the block of rank ``rank + i``; the end result is rotated back.
    """
    rank, size = comm.rank, comm.size
    if size == 1:
        return
    width = blocks(0, 1).nbytes
    gathered = ws.get(0, size * width)
    copy(gathered[:width], blocks(rank, rank + 1))
    distance = 1
    while distance < size:
        run = min(distance, size - distance) * width
        start = distance * width
        yield (
            send(comm, gathered[:run], (rank - distance) % size, tag),
            recv(comm, gathered[start : start + run], (rank + distance) % size, tag),
        )
        distance <<= 1
    head = (size - rank) * width  # blocks rank .. p-1, then 0 .. rank-1
    copy(blocks(rank, size), gathered[:head])
    copy(blocks(0, rank), gathered[head:])


def neighbor_exchange(comm: Any, tag: int, ws: Workspace, blocks: Blocks) -> Rounds:
    """Chen's neighbor exchange (Open MPI's): two blocks per step, neighbours alternating."""
    rank, size = comm.rank, comm.size
    if size == 1:
        return
    if rank % 2 == 0:
        neighbor = ((rank + 1) % size, (rank - 1) % size)
        received = [rank, rank]
        offset = (2, -2)
        sending = rank
    else:
        neighbor = ((rank - 1) % size, (rank + 1) % size)
        received = [neighbor[0], neighbor[0]]
        offset = (-2, 2)
        sending = neighbor[0]
    first = neighbor[0]
    yield (
        send(comm, blocks(rank, rank + 1), first, tag),
        recv(comm, blocks(first, first + 1), first, tag),
    )
    for step in range(1, size // 2):
        parity = step % 2
        received[parity] = (received[parity] + offset[parity]) % size
        start = received[parity]
        yield (
            send(comm, blocks(sending, sending + 2), neighbor[parity], tag),
            recv(comm, blocks(start, start + 2), neighbor[parity], tag),
        )
        sending = start
