"""Allreduce: recursive doubling, ring, Rabenseifner, and reduce + broadcast.

All of them reduce into the receive buffer (``result``), which already holds this rank's
contribution (the module copies the send buffer in first, or it is there ``IN_PLACE``).

- ``recursive_doubling``: ``log2 p`` exchanges of the whole vector; short messages.  Keeps rank
  order (the lower half's data always on the left), so it serves non-commutative operations.
- ``ring``: a reduce-scatter around the ring, then an allgather around it; each rank sends and
  receives ``2 n (p-1)/p`` bytes, in segments so each piece is reduced while it is hot in the
  cache.  Commutative operations only.
- ``rabenseifner``: reduce-scatter by recursive halving, allgather by recursive doubling: the
  ring's volume in ``2 log2 p`` steps.  Commutative operations only.
- ``reduce_bcast``: a binomial reduction to rank 0 and a binomial broadcast; order-preserving.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Reduction, Rounds, Workspace, fold_in, old_rank, pof2_below, split
from . import bcast, reduce

#: What the ``2^k`` survivors of a fold run among themselves: ``phase(comm, tag, red, new,
#: incoming)``, ``new`` the rank's number among them, ``incoming`` scratch of the vector's size.
Phase = Callable[[Any, int, Reduction, int, memoryview], Rounds]


def _folded(comm: Any, tag: int, ws: Workspace, red: Reduction, phase: Phase) -> Rounds:
    """Fold to a power of two (:func:`~..util.fold_in`), run ``phase``, unfold.

    Unfolding: each survivor that took over a dropped rank's data hands it the result.
    """
    rank, size = comm.rank, comm.size
    if size == 1:
        return
    result = red.source
    incoming = ws.get(0, result.nbytes)
    new = yield from fold_in(comm, tag, result, incoming, red)
    if new >= 0:
        yield from phase(comm, tag, red, new, incoming)
    if rank < 2 * (size - pof2_below(size)):
        if new < 0:
            yield (recv(comm, result, rank + 1, tag),)
        else:
            yield (send(comm, result, rank - 1, tag),)


def _doubling(comm: Any, tag: int, red: Reduction, new: int, incoming: memoryview) -> Rounds:
    result, pof2 = red.source, pof2_below(comm.size)
    remainder = comm.size - pof2
    commutative = red.commutative
    mine = result
    mask = 1
    while mask < pof2:
        partner = old_rank(new ^ mask, remainder)
        yield (send(comm, mine, partner, tag), recv(comm, incoming, partner, tag))
        if commutative or partner < comm.rank:
            red.combine(comm, incoming, mine)  # mine = theirs op mine
        else:
            red.combine(comm, mine, incoming)  # incoming = mine op theirs
            mine, incoming = incoming, mine  # (result is copied back at the end)
        mask <<= 1
    if mine is not result:
        copy(result, mine)


def recursive_doubling(comm: Any, tag: int, ws: Workspace, red: Reduction) -> Rounds:
    """Exchange the whole vector with ``rank xor 2^k``; lower ranks' data on the left."""
    return _folded(comm, tag, ws, red, _doubling)


def ring(comm: Any, tag: int, ws: Workspace, red: Reduction) -> Rounds:
    """Reduce-scatter then allgather around the ring, blocks cut into segments."""
    rank, size = comm.rank, comm.size
    if size == 1:
        return
    result, count, extent = red.source, red.count, red.extent
    counts, offsets = split(count, size)
    piece = max(1, ws.segment // extent) if extent and ws.segment else max(count, 1)
    incoming = ws.get(0, counts[0] * extent)
    right, left = (rank + 1) % size, (rank - 1) % size

    def block(index: int) -> memoryview:
        start = offsets[index] * extent
        return result[start : start + counts[index] * extent]

    for step in range(size - 1):
        out_index, in_index = (rank - step) % size, (rank - step - 1) % size
        outgoing, target, total = block(out_index), block(in_index), counts[in_index]
        pieces = [(lo, min(total, lo + piece)) for lo in range(0, total, piece)]
        out_total = counts[out_index]
        sends = [
            send(comm, outgoing[lo * extent : min(out_total, lo + piece) * extent], right, tag)
            for lo in range(0, out_total, piece)
        ]
        receives = [recv(comm, incoming[lo * extent : hi * extent], left, tag) for lo, hi in pieces]
        for (lo, hi), request in zip(pieces, receives, strict=True):
            yield (request,)
            part = slice(lo * extent, hi * extent)
            red.combine(comm, incoming[part], target[part], hi - lo)
        yield sends
    for step in range(size - 1):
        out_index, in_index = (rank + 1 - step) % size, (rank - step) % size
        yield (send(comm, block(out_index), right, tag), recv(comm, block(in_index), left, tag))


def _halving_doubling(
    comm: Any, tag: int, red: Reduction, new: int, incoming: memoryview
) -> Rounds:
    result, extent, pof2 = red.source, red.extent, pof2_below(comm.size)
    remainder = comm.size - pof2
    _counts, offsets = split(red.count, pof2)
    offsets.append(red.count)

    def blocks(first: int, stop: int) -> memoryview:
        return result[offsets[first] * extent : offsets[stop] * extent]

    low, high = 0, pof2
    mask = pof2 >> 1
    while mask:
        partner = old_rank(new ^ mask, remainder)
        middle = (low + high) // 2
        if new & mask:
            keep, give = (middle, high), (low, middle)
        else:
            keep, give = (low, middle), (middle, high)
        kept = blocks(*keep)
        into = incoming[: kept.nbytes]
        yield (send(comm, blocks(*give), partner, tag), recv(comm, into, partner, tag))
        red.combine(comm, into, kept, offsets[keep[1]] - offsets[keep[0]])
        low, high = keep
        mask >>= 1
    mask = 1
    while mask < pof2:
        partner = old_rank(new ^ mask, remainder)
        width = high - low
        theirs = (high, high + width) if not new & mask else (low - width, low)
        yield (
            send(comm, blocks(low, high), partner, tag),
            recv(comm, blocks(*theirs), partner, tag),
        )
        low, high = min(low, theirs[0]), max(high, theirs[1])
        mask <<= 1


def rabenseifner(comm: Any, tag: int, ws: Workspace, red: Reduction) -> Rounds:
    """Recursive halving (reduce-scatter) then recursive doubling (allgather), folded to 2^k."""
    return _folded(comm, tag, ws, red, _halving_doubling)


def reduce_bcast(comm: Any, tag: int, ws: Workspace, red: Reduction) -> Rounds:
    """Binomial reduction to rank 0, then a binomial broadcast from it (order-preserving)."""
    if comm.size == 1:
        return
    yield from reduce.binomial(comm, tag, ws, red, 0)
    yield from bcast.binomial(comm, tag, ws, red.source, 0)
