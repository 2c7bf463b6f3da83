"""Collectives with a root: barrier, bcast, gather(v), scatter(v), reduce.

Every function is a schedule (see :mod:`ompy.ompi.mca.coll.base.schedule`): a generator of
rounds, run blocking with ``run_schedule`` or nonblocking with ``start_schedule``.  Broadcast,
barrier and reduce follow a binomial tree (log2 p rounds); gather and scatter are linear (the
root talks to every rank in one round), which also serves their vector forms.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ompy.ompi.mca.coll.base import (
    binomial_children,
    binomial_parent,
    combine,
    copy,
    recv,
    scratch,
    send,
)
from ompy.ompi.mca.coll.base.helpers import binomial_bcast

Rounds = Generator[Any, None, Any]

_NOTHING = memoryview(b"")


def barrier(comm: Any, tag: int) -> Rounds:
    """Empty messages up a binomial tree to rank 0, then down again."""
    rank, size = comm.rank, comm.size
    parent = binomial_parent(rank, 0, size)
    children = binomial_children(rank, 0, size)
    if children:
        yield [recv(comm, memoryview(bytearray(0)), child, tag) for child in children]
    if parent is not None:
        yield (send(comm, _NOTHING, parent, tag),)
        yield (recv(comm, memoryview(bytearray(0)), parent, tag),)
    if children:
        yield [send(comm, _NOTHING, child, tag) for child in children]


def bcast(comm: Any, tag: int, spec: Any, root: int) -> Rounds:
    """``bcast(comm, spec, root)``: binomial tree."""
    yield from binomial_bcast(comm, tag, spec.view, root)


def gather(comm: Any, tag: int, sendspec: Any, recvspec: Any, root: int) -> Rounds:
    """``gather``/``gatherv``: every rank sends its block to the root, which receives all."""
    rank = comm.rank
    if rank != root:
        yield (send(comm, sendspec.view, root, tag),)
        return
    if not sendspec.in_place:
        copy(recvspec.block(rank), sendspec.view)
    peers = [peer for peer in range(comm.size) if peer != rank]
    if peers:
        yield [recv(comm, recvspec.block(peer), peer, tag) for peer in peers]


def scatter(comm: Any, tag: int, sendspec: Any, recvspec: Any, root: int) -> Rounds:
    """``scatter``/``scatterv``: the root sends every rank its block."""
    rank = comm.rank
    if rank != root:
        yield (recv(comm, recvspec.view, root, tag),)
        return
    if not recvspec.in_place:
        copy(recvspec.view, sendspec.block(rank))
    peers = [peer for peer in range(comm.size) if peer != rank]
    if peers:
        yield [send(comm, sendspec.block(peer), peer, tag) for peer in peers]


def tree_reduce(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, source: memoryview, count: int, datatype: Any, op: Any, root: int
) -> Rounds:
    """Binomial reduction of ``source`` to ``root``; returns the root's result (a scratch view).

    A node combines its own data with its children's results nearest child first; in relative
    ranks the subtree of each child is the next run of ranks, so with ``root`` 0 the result is
    ``x0 op x1 op ... op xp-1`` in rank order, as a non-commutative operation needs.  Other
    ranks return their partial result (already sent).
    """
    rank, size = comm.rank, comm.size
    accumulated = scratch(source.nbytes)
    copy(accumulated, source)
    children = binomial_children(rank, root, size)[::-1]  # nearest first
    if children:
        partials = [scratch(source.nbytes) for _ in children]
        yield [recv(comm, partials[i], child, tag) for i, child in enumerate(children)]
        for partial in partials:
            combine(comm, op, datatype, accumulated, partial, count)  # partial = mine op partial
            accumulated = partial
    parent = binomial_parent(rank, root, size)
    if parent is not None:
        yield (send(comm, accumulated, parent, tag),)
    return accumulated


def reduce(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    sendspec: Any,
    recvspec: Any,
    op: Any,
    root: int,
) -> Rounds:
    """``reduce``: binomial tree to the root (to rank 0 then the root for non-commutative ops)."""
    rank = comm.rank
    mine = recvspec if sendspec.in_place else sendspec
    tree_root = root if op.Is_commutative() else 0
    result = yield from tree_reduce(comm, tag, mine.view, mine.count, mine.datatype, op, tree_root)
    if tree_root == root:
        if rank == root:
            copy(recvspec.view, result)
    elif rank == tree_root:
        yield (send(comm, result, root, tag),)
    elif rank == root:
        yield (recv(comm, recvspec.view, tree_root, tag),)
