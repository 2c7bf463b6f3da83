"""The persistent collectives of ``basic``: every operation as a plan recorded at init.

The algorithms are those of :mod:`.rooted` and :mod:`.everyone` (binomial trees, linear
exchanges, a ring, chains for the scans; allreduce by recursive doubling), written against a
:class:`~ompy.ompi.mca.coll.base.PlanBuilder` instead of as generators: each function runs
once, at ``<op>_init``, computes the peers, allocates the scratch space and records the
transfers and local steps; every ``Start`` then replays them (see
:mod:`ompy.ompi.mca.coll.base.persistent`).  Reductions keep rank order, as the blocking
forms do, so non-commutative operations are right.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import (
    PlanBuilder,
    binomial_children,
    binomial_parent,
    neighborhood,
    region,
)

_NOTHING = memoryview(b"")


def _others(b: PlanBuilder) -> list[int]:
    return [peer for peer in range(b.size) if peer != b.rank]


def barrier(b: PlanBuilder) -> None:
    """Empty messages up a binomial tree to rank 0, then down again."""
    parent = binomial_parent(b.rank, 0, b.size)
    children = binomial_children(b.rank, 0, b.size)
    for child in children:
        b.recv(b.scratch(0), child)
    b.wait()
    if parent is not None:
        b.send(_NOTHING, parent)
        b.wait()
        b.recv(b.scratch(0), parent)
        b.wait()
    for child in children:
        b.send(_NOTHING, child)
    b.wait()


def _binomial_bcast(b: PlanBuilder, view: memoryview, root: int) -> None:
    parent = binomial_parent(b.rank, root, b.size)
    if parent is not None:
        b.recv(view, parent)
        b.wait()
    for child in binomial_children(b.rank, root, b.size):
        b.send(view, child)
    b.wait()


def bcast(b: PlanBuilder, spec: Any, root: int) -> None:
    """Binomial tree from ``root``."""
    _binomial_bcast(b, spec.view, root)


def gather(b: PlanBuilder, sendspec: Any, recvspec: Any, root: int) -> None:
    """``gather``/``gatherv``: every rank sends its block to the root, which receives all."""
    if b.rank != root:
        b.send(sendspec.view, root)
        b.wait()
        return
    if not sendspec.in_place:
        b.copy(recvspec.block(root), sendspec.view)
    for peer in _others(b):
        b.recv(recvspec.block(peer), peer)
    b.wait()


def scatter(b: PlanBuilder, sendspec: Any, recvspec: Any, root: int) -> None:
    """``scatter``/``scatterv``: the root sends every rank its block."""
    if b.rank != root:
        b.recv(recvspec.view, root)
        b.wait()
        return
    if not recvspec.in_place:
        b.copy(recvspec.view, sendspec.block(root))
    for peer in _others(b):
        b.send(sendspec.block(peer), peer)
    b.wait()


def _tree_reduce(  # noqa: PLR0917 (the algorithms call it positionally)
    b: PlanBuilder, source: memoryview, count: int, datatype: Any, op: Any, root: int
) -> memoryview:
    """Binomial reduction of ``source`` to ``root``; the view holding the root's result.

    A node combines its data with its children's partial results nearest child first (their
    subtrees are the next runs of relative ranks), so with ``root`` 0 the result is
    ``x0 op x1 op ... op xp-1``.  ``source`` is only read: each combination lands in the
    child's scratch buffer.
    """
    accumulated = source
    children = binomial_children(b.rank, root, b.size)[::-1]  # nearest first
    if children:
        partials = [b.scratch(source.nbytes) for _ in children]
        for partial, child in zip(partials, children, strict=True):
            b.recv(partial, child)
        b.wait()
        for partial in partials:
            b.combine(op, datatype, accumulated, partial, count)  # partial = mine op partial
            accumulated = partial
    parent = binomial_parent(b.rank, root, b.size)
    if parent is not None:
        b.send(accumulated, parent)
        b.wait()
    return accumulated


def reduce(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any, root: int) -> None:
    """Binomial tree to the root (to rank 0 then the root for non-commutative ops)."""
    mine = recvspec if sendspec.in_place else sendspec
    tree_root = root if op.Is_commutative() else 0
    result = _tree_reduce(b, mine.view, mine.count, mine.datatype, op, tree_root)
    if tree_root == root:
        if b.rank == root:
            b.copy(recvspec.view, result)
    elif b.rank == tree_root:
        b.send(result, root)
        b.wait()
    elif b.rank == root:
        b.recv(recvspec.view, tree_root)
        b.wait()


def allgather(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``allgather``/``allgatherv``: ring; round ``k`` passes on the block received in ``k-1``."""
    rank, size = b.rank, b.size
    if not sendspec.in_place:
        b.copy(recvspec.block(rank), sendspec.view)
    left, right = (rank - 1) % size, (rank + 1) % size
    for step in range(size - 1):
        b.send(recvspec.block((rank - step) % size), right)
        b.recv(recvspec.block((rank - step - 1) % size), left)
        b.wait()


def _exchange(b: PlanBuilder, outgoing: list[memoryview], incoming: list[memoryview]) -> None:
    b.copy(incoming[b.rank], outgoing[b.rank])
    for peer in _others(b):
        b.recv(incoming[peer], peer)
        b.send(outgoing[peer], peer)
    b.wait()


def _snapshot(b: PlanBuilder, views: list[memoryview]) -> list[memoryview]:
    """Scratch copies of ``views``, refreshed by every start (in place, what is sent is
    overwritten by what arrives)."""
    copies = []
    for view in views:
        duplicate = b.scratch(view.nbytes)
        b.copy(duplicate, view)
        copies.append(duplicate)
    return copies


def alltoall(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``alltoall``/``alltoallv``: linear, every pair at once."""
    incoming = [recvspec.block(peer) for peer in range(b.size)]
    if sendspec.in_place:
        outgoing = _snapshot(b, incoming)
    else:
        outgoing = [sendspec.block(peer) for peer in range(b.size)]
    _exchange(b, outgoing, incoming)


def alltoallw(b: PlanBuilder, sendspecs: Any, recvspecs: Any) -> None:
    """``alltoallw``: linear, one datatype and displacement per peer (already staged)."""
    incoming = [spec.view for spec in recvspecs]
    in_place = sendspecs is None
    outgoing = _snapshot(b, incoming) if in_place else [spec.view for spec in sendspecs]
    _exchange(b, outgoing, incoming)


def allreduce(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """Recursive doubling, folded to a power of two: ``log2 p`` exchanges of the whole vector.

    A persistent allreduce is for short vectors started many times, where the number of
    message latencies in a row is what costs: one exchange at 2 ranks, where a reduction to a
    root and a broadcast take two.  Rank order is kept (the lower ranks' data is always on
    the left of ``op``), so non-commutative operations are right.

    Folding: of the first ``2 * rem`` ranks (``rem = p - 2^k``), each even rank hands its
    vector to the odd rank above it and sits out; the ``2^k`` survivors are renumbered in rank
    order (survivor ``i`` stands for a contiguous run of ranks); each even rank gets the result
    back from its odd neighbour at the end.
    """
    rank, size = b.rank, b.size
    count, datatype, result = recvspec.count, recvspec.datatype, recvspec.view
    if not sendspec.in_place:
        b.copy(result, sendspec.view)
    if size == 1:
        return
    pof2 = 1 << (size.bit_length() - 1)
    rem = size - pof2
    incoming = b.scratch(result.nbytes)
    folded = rank < 2 * rem
    if folded and rank % 2 == 0:
        b.send(result, rank + 1)
        b.wait()
        b.recv(result, rank + 1)
        b.wait()
        return
    if folded:
        b.recv(incoming, rank - 1)
        b.wait()
        b.combine(op, datatype, incoming, result, count)  # result = lower op mine
    new = rank // 2 if folded else rank - rem
    mine, other = result, incoming
    mask = 1
    while mask < pof2:
        partner_new = new ^ mask
        partner = 2 * partner_new + 1 if partner_new < rem else partner_new + rem
        b.send(mine, partner)
        b.recv(other, partner)
        b.wait()
        if partner_new < new:
            b.combine(op, datatype, other, mine, count)  # mine = theirs op mine
        else:
            b.combine(op, datatype, mine, other, count)  # other = mine op theirs
            mine, other = other, mine
        mask <<= 1
    b.copy(result, mine)
    if folded:
        b.send(result, rank - 1)
        b.wait()


def reduce_scatter(
    b: PlanBuilder, sendspec: Any, recvspec: Any, counts: tuple[int, ...], op: Any
) -> None:
    """Reduce ``sum(counts)`` elements to rank 0, which sends rank ``i`` its ``counts[i]``."""
    total = sum(counts)
    datatype = recvspec.datatype
    source = region(recvspec, total) if sendspec.in_place else sendspec.view
    result = _tree_reduce(b, source, total, datatype, op, 0)
    if b.rank != 0:
        b.recv(recvspec.view, 0)
        b.wait()
        return
    extent = datatype.extent
    blocks, start = [], 0
    for count in counts:
        blocks.append(result[start : start + count * extent])
        start += count * extent
    b.copy(recvspec.view, blocks[0])
    for peer in range(1, b.size):
        b.send(blocks[peer], peer)
    b.wait()


def reduce_scatter_block(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """Reduce to rank 0, then scatter equal blocks."""
    reduce_scatter(b, sendspec, recvspec, (recvspec.count,) * b.size, op)


def scan(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """Rank ``r`` gets ``x0 op ... op xr`` from ``r-1``'s result, then passes it on."""
    rank = b.rank
    if not sendspec.in_place:
        b.copy(recvspec.view, sendspec.view)
    if rank > 0:
        previous = b.scratch(recvspec.view.nbytes)
        b.recv(previous, rank - 1)
        b.wait()
        b.combine(op, recvspec.datatype, previous, recvspec.view, recvspec.count)
    if rank < b.size - 1:
        b.send(recvspec.view, rank + 1)
        b.wait()


def exscan(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """Rank ``r`` gets ``x0 op ... op xr-1``; rank 0's receive buffer is left untouched."""
    rank, last = b.rank, b.size - 1
    mine = b.scratch(recvspec.view.nbytes)
    b.copy(mine, recvspec.view if sendspec.in_place else sendspec.view)
    if rank > 0:
        b.recv(recvspec.view, rank - 1)
        b.wait()
        if rank < last:
            b.combine(op, recvspec.datatype, recvspec.view, mine, recvspec.count)
    if rank < last:
        b.send(mine, rank + 1)
        b.wait()


# -- neighbor collectives (communicators with a topology) ----------------------------------------


def _neighbor_exchange(b: PlanBuilder, name: str, outgoing: Any, incoming: Any) -> None:
    """One round: a receive per in-edge and a send per out-edge (``PROC_NULL`` ones skipped),
    in the order :func:`~ompy.ompi.mca.coll.base.neighborhood` gives, as the blocking form."""
    edges = neighborhood(b.comm, name)
    for block, source in edges.receives():
        b.recv(incoming(block), source)
    for block, dest in edges.sends():
        b.send(outgoing(block), dest)
    b.wait()


def neighbor_allgather(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``neighbor_allgather(v)``: this member's block to every out-neighbour."""
    view = sendspec.view
    _neighbor_exchange(b, "neighbor_allgather_init", lambda _: view, recvspec.block)


def neighbor_alltoall(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``neighbor_alltoall(v)``: block ``i`` to out-neighbour ``i``."""
    _neighbor_exchange(b, "neighbor_alltoall_init", sendspec.block, recvspec.block)


def neighbor_alltoallw(b: PlanBuilder, sendspecs: Any, recvspecs: Any) -> None:
    """``neighbor_alltoallw``: as alltoall, one datatype and byte displacement per edge."""
    _neighbor_exchange(
        b,
        "neighbor_alltoallw_init",
        lambda block: sendspecs[block].view,
        lambda block: recvspecs[block].view,
    )
