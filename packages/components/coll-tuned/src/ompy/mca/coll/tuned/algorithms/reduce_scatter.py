"""Reduce-scatter (``counts[i]`` elements to rank ``i``): recursive halving, ring, reduce + scatter.

``red.source`` holds the ``sum(counts)`` elements of this rank's contribution; the result block
of this rank goes to ``red.target`` (which may lie inside ``source`` when the call is ``IN_PLACE``:
every algorithm reads ``source`` into scratch before it writes ``target``).

- ``recursive_halving`` (commutative): fold to ``2^k`` ranks, then ``k`` steps each exchanging
  half of the remaining range; ``n`` bytes in ``log2 p`` steps (MPICH's, any counts).
- ``ring`` (commutative): ``p-1`` steps of one block each (long messages, any ``p``).
- ``nonoverlapping`` (any op): binomial reduction to rank 0 in rank order, then rank 0 sends
  every rank its block.
"""

from __future__ import annotations

from typing import Any

import attrs

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Reduction, Rounds, Workspace, fold_in, pof2_below
from . import reduce


def _offsets(counts: tuple[int, ...]) -> list[int]:
    offsets = [0]
    for count in counts:
        offsets.append(offsets[-1] + count)
    return offsets


def recursive_halving(
    comm: Any, tag: int, ws: Workspace, red: Reduction, counts: tuple[int, ...]
) -> Rounds:
    """Fold to a power of two; survivor ``j`` ends with the blocks of its group of ranks."""
    rank, size = comm.rank, comm.size
    extent, target = red.extent, red.target
    offsets = _offsets(counts)
    work = ws.get("work", red.count * extent)
    copy(work, red.source)
    pof2 = pof2_below(size)
    remainder = size - pof2
    incoming = ws.get("incoming", red.count * extent)
    new = yield from fold_in(comm, tag, work, incoming, red)
    if new < 0:  # dropped out: the odd neighbour sends this rank's block at the end
        yield (recv(comm, target, rank + 1, tag),)
        return
    # Survivor j answers for the blocks of old ranks first[j] .. first[j+1]-1.
    first = [2 * j if j < remainder else j + remainder for j in range(pof2)] + [size]

    def elements(low: int, high: int) -> tuple[int, int]:
        return offsets[first[low]], offsets[first[high]]

    low, high = 0, pof2
    mask = pof2 >> 1
    while mask:
        partner_new = new ^ mask
        partner = 2 * partner_new + 1 if partner_new < remainder else partner_new + remainder
        middle = (low + high) // 2
        lower, upper = (low, middle), (middle, high)
        keep, give = (upper, lower) if new & mask else (lower, upper)
        keep_lo, keep_hi = elements(*keep)
        give_lo, give_hi = elements(*give)
        into = incoming[: (keep_hi - keep_lo) * extent]
        yield (
            send(comm, work[give_lo * extent : give_hi * extent], partner, tag),
            recv(comm, into, partner, tag),
        )
        red.combine(comm, into, work[keep_lo * extent : keep_hi * extent], keep_hi - keep_lo)
        low, high = keep
        mask >>= 1
    if new < remainder:  # this odd rank also holds the block of the even rank below it
        below = rank - 1
        yield (send(comm, work[offsets[below] * extent : offsets[rank] * extent], below, tag),)
    copy(target, work[offsets[rank] * extent : offsets[rank + 1] * extent])


def ring(comm: Any, tag: int, ws: Workspace, red: Reduction, counts: tuple[int, ...]) -> Rounds:
    """Step ``k`` sends block ``rank-k-1`` to the right after adding in what came from the left."""
    rank, size = comm.rank, comm.size
    extent = red.extent
    offsets = _offsets(counts)
    work = ws.get("work", red.count * extent)
    copy(work, red.source)
    incoming = ws.get("incoming", max(counts) * extent)
    right, left = (rank + 1) % size, (rank - 1) % size

    def block(index: int) -> memoryview:
        return work[offsets[index] * extent : offsets[index + 1] * extent]

    for step in range(size - 1):
        out_index, in_index = (rank - step - 1) % size, (rank - step - 2) % size
        into = incoming[: counts[in_index] * extent]
        yield (send(comm, block(out_index), right, tag), recv(comm, into, left, tag))
        red.combine(comm, into, block(in_index), counts[in_index])
    copy(red.target, block(rank))


def nonoverlapping(
    comm: Any, tag: int, ws: Workspace, red: Reduction, counts: tuple[int, ...]
) -> Rounds:
    """Binomial reduction to rank 0 (rank order kept), then rank 0 sends each block."""
    rank = comm.rank
    extent = red.extent
    offsets = _offsets(counts)
    reduced = ws.get("reduced", red.source.nbytes) if rank == 0 else None
    yield from reduce.binomial(comm, tag, ws, attrs.evolve(red, target=reduced), 0)
    if rank != 0:
        yield (recv(comm, red.target, 0, tag),)
        return
    sends = [
        send(comm, reduced[offsets[peer] * extent : offsets[peer + 1] * extent], peer, tag)
        for peer in range(1, comm.size)
    ]
    copy(red.target, reduced[: counts[0] * extent])
    if sends:
        yield sends
