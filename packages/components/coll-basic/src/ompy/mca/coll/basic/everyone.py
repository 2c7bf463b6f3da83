"""Collectives without a root: allgather(v), alltoall(v,w), allreduce, reduce-scatter, scans.

Schedules like those of :mod:`.rooted`.  Allgather is a ring (p-1 rounds, any block layout);
alltoall is linear (every pair in one round); allreduce and the reduce-scatters reduce to rank 0
(rank order, so non-commutative operations are right) and then broadcast or scatter; scan and
exscan pass the running result along the ranks, one hop per round.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import combine, copy, recv, region, scratch, send
from ompy.ompi.mca.coll.base.helpers import binomial_bcast

from .rooted import Rounds, tree_reduce


def allgather(comm: Any, tag: int, sendspec: Any, recvspec: Any) -> Rounds:
    """``allgather``/``allgatherv``: ring; round ``k`` passes on the block received in ``k-1``."""
    rank, size = comm.rank, comm.size
    if not sendspec.in_place:
        copy(recvspec.block(rank), sendspec.view)
    left, right = (rank - 1) % size, (rank + 1) % size
    for step in range(size - 1):
        outgoing = recvspec.block((rank - step) % size)
        incoming = recvspec.block((rank - step - 1) % size)
        yield (send(comm, outgoing, right, tag), recv(comm, incoming, left, tag))


def _exchange(
    comm: Any, tag: int, outgoing: list[memoryview], incoming: list[memoryview]
) -> Rounds:
    """Every rank sends ``outgoing[peer]`` to and receives ``incoming[peer]`` from every peer."""
    rank = comm.rank
    copy(incoming[rank], outgoing[rank])
    requests = []
    for peer in range(comm.size):
        if peer != rank:
            requests.append(recv(comm, incoming[peer], peer, tag))
            requests.append(send(comm, outgoing[peer], peer, tag))
    if requests:
        yield requests


def _snapshot(views: list[memoryview]) -> list[memoryview]:
    """Copies of ``views`` (in place, the data to send is overwritten by what arrives)."""
    copies = []
    for view in views:
        duplicate = scratch(view.nbytes)
        copy(duplicate, view)
        copies.append(duplicate)
    return copies


def alltoall(comm: Any, tag: int, sendspec: Any, recvspec: Any) -> Rounds:
    """``alltoall``/``alltoallv``: linear, every pair at once."""
    incoming = [recvspec.block(peer) for peer in range(comm.size)]
    if sendspec.in_place:
        outgoing = _snapshot(incoming)
    else:
        outgoing = [sendspec.block(peer) for peer in range(comm.size)]
    yield from _exchange(comm, tag, outgoing, incoming)


def alltoallw(comm: Any, tag: int, sendspecs: Any, recvspecs: Any) -> Rounds:
    """``alltoallw``: linear, with one datatype and displacement per peer."""
    incoming = [spec.view for spec in recvspecs]
    outgoing = _snapshot(incoming) if sendspecs is None else [spec.view for spec in sendspecs]
    yield from _exchange(comm, tag, outgoing, incoming)


def allreduce(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``allreduce``: binomial reduce to rank 0, binomial broadcast from it."""
    source = recvspec.view if sendspec.in_place else sendspec.view
    result = yield from tree_reduce(comm, tag, source, recvspec.count, recvspec.datatype, op, 0)
    if comm.rank == 0:
        copy(recvspec.view, result)
    yield from binomial_bcast(comm, tag, recvspec.view, 0)


def _reduce_then_scatter(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, sendspec: Any, recvspec: Any, counts: tuple[int, ...], op: Any
) -> Rounds:
    """Reduce ``sum(counts)`` elements to rank 0, which sends rank ``i`` its ``counts[i]``."""
    total = sum(counts)
    datatype = recvspec.datatype
    source = region(recvspec, total) if sendspec.in_place else sendspec.view
    result = yield from tree_reduce(comm, tag, source, total, datatype, op, 0)
    if comm.rank != 0:
        yield (recv(comm, recvspec.view, 0, tag),)
        return
    extent = datatype.extent
    blocks, start = [], 0
    for count in counts:
        blocks.append(result[start : start + count * extent])
        start += count * extent
    copy(recvspec.view, blocks[0])
    if comm.size > 1:
        yield [send(comm, blocks[peer], peer, tag) for peer in range(1, comm.size)]


def reduce_scatter_block(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``reduce_scatter_block``: reduce to rank 0, then scatter equal blocks."""
    counts = (recvspec.count,) * comm.size
    yield from _reduce_then_scatter(comm, tag, sendspec, recvspec, counts, op)


def reduce_scatter(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, sendspec: Any, recvspec: Any, recvcounts: tuple[int, ...], op: Any
) -> Rounds:
    """``reduce_scatter``: reduce to rank 0, then scatter ``recvcounts[i]`` elements to ``i``."""
    yield from _reduce_then_scatter(comm, tag, sendspec, recvspec, recvcounts, op)


def scan(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``scan``: rank ``r`` gets ``x0 op ... op xr`` from ``r-1``'s result, then passes it on."""
    rank = comm.rank
    if not sendspec.in_place:
        copy(recvspec.view, sendspec.view)
    if rank > 0:
        previous = scratch(recvspec.view.nbytes)
        yield (recv(comm, previous, rank - 1, tag),)
        combine(comm, op, recvspec.datatype, previous, recvspec.view, recvspec.count)
    if rank < comm.size - 1:
        yield (send(comm, recvspec.view, rank + 1, tag),)


def exscan(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``exscan``: rank ``r`` gets ``x0 op ... op xr-1``; rank 0's receive buffer is untouched."""
    rank, last = comm.rank, comm.size - 1
    mine = scratch(recvspec.view.nbytes)
    copy(mine, recvspec.view if sendspec.in_place else sendspec.view)
    if rank > 0:
        yield (recv(comm, recvspec.view, rank - 1, tag),)
        if rank < last:
            combine(comm, op, recvspec.datatype, recvspec.view, mine, recvspec.count)
    if rank < last:
        yield (send(comm, mine, rank + 1, tag),)
