"""Reduce: binomial tree, and a segmented chain for long messages.

Both keep MPI's rank order, so they serve non-commutative operations too: the binomial tree
then reduces towards rank 0 (whose subtrees are runs of consecutive ranks) and rank 0 hands
the result to the root; the chain runs from rank ``p-1`` down to rank 0, each rank putting its
contribution on the left of what it received.  A commutative reduction needs no detour: the
tree and the chain end at the root directly.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import binomial_children, binomial_parent, copy, recv, send

from ..util import Reduction, Rounds, Workspace


def binomial(comm: Any, tag: int, ws: Workspace, red: Reduction, root: int) -> Rounds:
    """Binomial reduction of ``source`` into ``target`` at ``root`` (any op, rank order kept)."""
    rank, size = comm.rank, comm.size
    source, target = red.source, red.target
    commutative = red.commutative
    tree_root = root if commutative else 0
    nbytes = source.nbytes
    children = binomial_children(rank, tree_root, size)[::-1]  # nearest first: rank order
    result = source
    if children:
        partials = [ws.get(1 + index, nbytes) for index in range(len(children))]
        receives = [recv(comm, partials[i], child, tag) for i, child in enumerate(children)]
        if commutative:  # combine into one accumulator, in whatever order data arrives
            result = target if rank == root else ws.get(0, nbytes)
            copy(result, source)
            for request, partial in zip(receives, partials, strict=True):
                yield (request,)
                red.combine(comm, partial, result)
        else:  # mine op child's, in rank order: the running result moves into each partial
            yield receives
            for partial in partials:
                red.combine(comm, result, partial)
                result = partial
    parent = binomial_parent(rank, tree_root, size)
    if parent is not None:
        yield (send(comm, result, parent, tag),)
    elif root != rank:  # non-commutative: rank 0 reduced, the root receives from it
        yield (send(comm, result, root, tag),)
    if rank == root and tree_root != root:
        yield (recv(comm, target, tree_root, tag),)
    elif rank == root and result is not target:
        copy(target, result)


def pipeline(comm: Any, tag: int, ws: Workspace, red: Reduction, root: int) -> Rounds:
    """Segments flow down a chain of ranks to the root; each rank reduces them on the way.

    A commutative chain runs ``root-1, root-2, ..., root`` (relative ranks ``p-1 .. 0``); a
    non-commutative one runs ``p-1, ..., 0`` and rank 0 passes the result to the root.
    """
    rank, size = comm.rank, comm.size
    source, target, count = red.source, red.target, red.count
    head = root if red.commutative else 0
    relative = (rank - head) % size
    extent = red.extent
    per_segment = max(1, ws.segment // extent) if extent and ws.segment else max(count, 1)
    bounds = [
        (start, min(count, start + per_segment)) for start in range(0, count, per_segment)
    ] or [(0, 0)]
    if relative == size - 1 and size > 1:  # the far end only sends its own data
        yield [
            send(comm, source[lo * extent : hi * extent], (rank - 1) % size, tag)
            for lo, hi in bounds
        ]
    elif size > 1:
        at_head = relative == 0
        direct = at_head and rank == root and target is not source
        partial = target if direct else ws.get(0, source.nbytes)
        receives = [
            recv(comm, partial[lo * extent : hi * extent], (rank + 1) % size, tag)
            for lo, hi in bounds
        ]
        sends = []
        for (lo, hi), request in zip(bounds, receives, strict=True):
            yield (request,)
            piece = partial[lo * extent : hi * extent]
            red.combine(comm, source[lo * extent : hi * extent], piece, hi - lo)
            if not at_head:
                sends.append(send(comm, piece, (rank - 1) % size, tag))
        if sends:
            yield sends
        if at_head and rank == root and not direct:
            copy(target, partial)
        elif at_head and rank != root:
            yield (send(comm, partial, root, tag),)
    else:
        copy(target, source)
    if rank == root and head != root:
        yield (recv(comm, target, head, tag),)
