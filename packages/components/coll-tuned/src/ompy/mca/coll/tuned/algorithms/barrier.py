"""Barrier: recursive doubling (with the extra ranks folded in) and Bruck's dissemination.

Both finish in ceil(log2 p) rounds of empty messages; dissemination needs no folding (every
rank talks to ``rank + 2^k`` and hears from ``rank - 2^k``), recursive doubling exchanges with
``rank xor 2^k`` and costs two extra rounds when ``p`` is not a power of two.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import recv, send

from ..util import EMPTY, EMPTY_IN, Rounds, Workspace, pof2_below


def recursive_doubling(comm: Any, tag: int, ws: Workspace) -> Rounds:
    """Pairwise exchanges with ``rank xor 2^k``; ranks past the power of two check in first."""
    rank, size = comm.rank, comm.size
    pof2 = pof2_below(size)
    if rank >= pof2:  # an extra rank: report to a partner, wait for its release
        partner = rank - pof2
        yield (send(comm, EMPTY, partner, tag),)
        yield (recv(comm, EMPTY_IN, partner, tag),)
        return
    extra = rank + pof2 if rank + pof2 < size else None
    if extra is not None:
        yield (recv(comm, EMPTY_IN, extra, tag),)
    mask = 1
    while mask < pof2:
        partner = rank ^ mask
        yield (send(comm, EMPTY, partner, tag), recv(comm, EMPTY_IN, partner, tag))
        mask <<= 1
    if extra is not None:
        yield (send(comm, EMPTY, extra, tag),)


def bruck(comm: Any, tag: int, ws: Workspace) -> Rounds:
    """Dissemination: round ``k`` sends to ``rank + 2^k`` and hears from ``rank - 2^k``."""
    rank, size = comm.rank, comm.size
    distance = 1
    while distance < size:
        yield (
            send(comm, EMPTY, (rank + distance) % size, tag),
            recv(comm, EMPTY_IN, (rank - distance) % size, tag),
        )
        distance <<= 1
