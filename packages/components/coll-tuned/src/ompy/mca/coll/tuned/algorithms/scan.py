"""Scan and exscan: recursive doubling (``log2 p`` steps) and the linear chain (``p-1`` hops).

Recursive doubling (MPICH's): each rank keeps ``partial``, the reduction of the aligned group
of ``2^k`` ranks it belongs to, and exchanges it with ``rank xor 2^k``; data from a lower
partner is added on the left of both ``partial`` and the result, data from a higher partner on
the right of ``partial`` only, which keeps rank order for non-commutative operations.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import combine, copy, recv, send

from ..util import Rounds, Workspace


def _doubling(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    source: memoryview,
    result: memoryview,
    count: int,
    datatype: Any,
    op: Any,
    exclusive: bool,
) -> Rounds:
    rank, size = comm.rank, comm.size
    commutative = op.Is_commutative()
    nbytes = source.nbytes
    partial, incoming = ws.get(0, nbytes), ws.get(1, nbytes)
    copy(partial, source)
    if not exclusive and result is not source:
        copy(result, source)
    have_result = not exclusive
    mask = 1
    while mask < size:
        partner = rank ^ mask
        if partner < size:
            yield (send(comm, partial, partner, tag), recv(comm, incoming, partner, tag))
            if partner < rank:
                combine(comm, op, datatype, incoming, partial, count)
                if have_result:
                    combine(comm, op, datatype, incoming, result, count)
                else:
                    copy(result, incoming)
                    have_result = True
            elif commutative:
                combine(comm, op, datatype, incoming, partial, count)
            else:
                combine(comm, op, datatype, partial, incoming, count)
                partial, incoming = incoming, partial
        mask <<= 1


def scan_recursive_doubling(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    source: memoryview,
    result: memoryview,
    count: int,
    datatype: Any,
    op: Any,
) -> Rounds:
    """Inclusive scan by recursive doubling."""
    yield from _doubling(comm, tag, ws, source, result, count, datatype, op, False)


def exscan_recursive_doubling(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    source: memoryview,
    result: memoryview,
    count: int,
    datatype: Any,
    op: Any,
) -> Rounds:
    """Exclusive scan by recursive doubling; rank 0's result is left untouched."""
    yield from _doubling(comm, tag, ws, source, result, count, datatype, op, True)


def scan_linear(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    source: memoryview,
    result: memoryview,
    count: int,
    datatype: Any,
    op: Any,
) -> Rounds:
    """Rank ``r`` receives ``x0 op .. op x(r-1)`` from ``r-1``, adds its own, passes it on."""
    rank = comm.rank
    if result is not source:
        copy(result, source)
    if rank > 0:
        previous = ws.get(0, source.nbytes)
        yield (recv(comm, previous, rank - 1, tag),)
        combine(comm, op, datatype, previous, result, count)
    if rank < comm.size - 1:
        yield (send(comm, result, rank + 1, tag),)


def exscan_linear(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    source: memoryview,
    result: memoryview,
    count: int,
    datatype: Any,
    op: Any,
) -> Rounds:
    """Rank ``r`` receives ``x0 op .. op x(r-1)`` into its result and passes on that op ``xr``."""
    rank, last = comm.rank, comm.size - 1
    mine = ws.get(0, source.nbytes)
    copy(mine, source)
    if rank > 0:
        yield (recv(comm, result, rank - 1, tag),)
        if rank < last:
            combine(comm, op, datatype, result, mine, count)
    if rank < last:
        yield (send(comm, mine, rank + 1, tag),)
