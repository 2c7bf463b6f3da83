"""Scan and exscan: recursive doubling (``log2 p`` steps) and the linear chain (``p-1`` hops).

Recursive doubling (MPICH's): each rank keeps ``partial``, the reduction of the aligned group
of ``2^k`` ranks it belongs to, and exchanges it with ``rank xor 2^k``; data from a lower
partner is added on the left of both ``partial`` and the result, data from a higher partner on
the right of ``partial`` only, which keeps rank order for non-commutative operations.

Each algorithm serves both forms (``exclusive``): the module binds it (``functools.partial``).
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Reduction, Rounds, Workspace


def recursive_doubling(
    comm: Any, tag: int, ws: Workspace, red: Reduction, *, exclusive: bool
) -> Rounds:
    """Scan by recursive doubling; an exclusive scan leaves rank 0's result untouched."""
    rank, size = comm.rank, comm.size
    source, result = red.source, red.target
    commutative = red.commutative
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
                red.combine(comm, incoming, partial)
                if have_result:
                    red.combine(comm, incoming, result)
                else:
                    copy(result, incoming)
                    have_result = True
            elif commutative:
                red.combine(comm, incoming, partial)
            else:
                red.combine(comm, partial, incoming)
                partial, incoming = incoming, partial
        mask <<= 1


def linear(comm: Any, tag: int, ws: Workspace, red: Reduction, *, exclusive: bool) -> Rounds:
    """Rank ``r`` receives ``x0 op .. op x(r-1)`` from ``r-1`` and passes on that op ``xr``.

    The inclusive scan keeps the running reduction in its result; the exclusive one receives
    into its result and runs the reduction in scratch (the last rank has nothing to pass on).
    """
    rank, last = comm.rank, comm.size - 1
    source, result = red.source, red.target
    running = ws.get(0, source.nbytes) if exclusive else result  # x0 op .. op xr
    if running is not source:
        copy(running, source)
    if rank > 0:
        before = result if exclusive else ws.get(1, source.nbytes)  # x0 op .. op x(r-1)
        yield (recv(comm, before, rank - 1, tag),)
        if rank < last or not exclusive:
            red.combine(comm, before, running)
    if rank < last:
        yield (send(comm, running, rank + 1, tag),)
