"""Broadcast: binomial tree, segmented chain and binary tree, scatter + allgather (van de Geijn).

The binomial tree sends the whole message ``log2 p`` times from the root (best for small
messages).  The chain and the binary tree cut the message into segments and forward each
segment as soon as it arrives, so the links work in parallel (long messages, many ranks).
Scatter + allgather moves about ``2 n`` bytes per rank whatever ``p`` is: the root scatters
``p`` chunks down a binomial tree and a ring passes every chunk around.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll.base import binomial_children, binomial_parent, recv, send, subtree_size
from ompy.ompi.mca.coll.base.helpers import binomial_bcast

from ..util import Rounds, Workspace


def binomial(comm: Any, tag: int, ws: Workspace, view: memoryview, root: int) -> Rounds:
    """The whole message down the binomial tree rooted at ``root``."""
    yield from binomial_bcast(comm, tag, view, root)


def _segments(view: memoryview, segsize: int) -> list[memoryview]:
    nbytes = view.nbytes
    if segsize <= 0 or nbytes <= segsize:
        return [view]
    return [view[start : start + segsize] for start in range(0, nbytes, segsize)]


def _forward(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, view: memoryview, segsize: int, parent: int | None, children: list[int]
) -> Rounds:
    """Receive the segments from ``parent`` and pass each to ``children`` as it arrives."""
    segments = _segments(view, segsize)
    sends = []
    if parent is None:
        sends = [send(comm, segment, child, tag) for segment in segments for child in children]
    else:
        receives = [recv(comm, segment, parent, tag) for segment in segments]
        for segment, request in zip(segments, receives, strict=True):
            yield (request,)
            sends.extend(send(comm, segment, child, tag) for child in children)
    if sends:
        yield sends


def pipeline(comm: Any, tag: int, ws: Workspace, view: memoryview, root: int) -> Rounds:
    """Segments along the chain root, root+1, ..., root-1; each forwarded on arrival."""
    size = comm.size
    relative = (comm.rank - root) % size
    parent = None if relative == 0 else (comm.rank - 1) % size
    children = [(comm.rank + 1) % size] if relative < size - 1 else []
    yield from _forward(comm, tag, view, ws.segment, parent, children)


def binary(comm: Any, tag: int, ws: Workspace, view: memoryview, root: int) -> Rounds:
    """Segments down the binary tree of relative ranks (children ``2r+1``, ``2r+2``)."""
    size = comm.size
    relative = (comm.rank - root) % size
    parent = None if relative == 0 else ((relative - 1) // 2 + root) % size
    children = [
        (child + root) % size for child in (2 * relative + 1, 2 * relative + 2) if child < size
    ]
    yield from _forward(comm, tag, view, ws.segment, parent, children)


def scatter_allgather(comm: Any, tag: int, ws: Workspace, view: memoryview, root: int) -> Rounds:
    """Binomial scatter of ``p`` chunks, then a ring allgather of them (van de Geijn).

    Relative rank ``r`` owns chunk ``r`` (bytes ``r*c .. (r+1)*c``, the last ones shorter or
    empty); a binomial subtree owns a run of chunks, so every scatter message is contiguous.
    """
    rank, size = comm.rank, comm.size
    nbytes = view.nbytes
    chunk = -(-nbytes // size)

    def chunks(first: int, stop: int) -> memoryview:
        return view[min(first * chunk, nbytes) : min(stop * chunk, nbytes)]

    relative = (rank - root) % size
    parent = binomial_parent(rank, root, size)
    if parent is not None:
        span = subtree_size(rank, root, size)
        yield (recv(comm, chunks(relative, relative + span), parent, tag),)
    children = binomial_children(rank, root, size)
    if children:
        requests = []
        for child in children:
            first = (child - root) % size
            span = subtree_size(child, root, size)
            requests.append(send(comm, chunks(first, first + span), child, tag))
        yield requests
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        outgoing = (relative - step) % size
        incoming = (relative - step - 1) % size
        yield (
            send(comm, chunks(outgoing, outgoing + 1), right, tag),
            recv(comm, chunks(incoming, incoming + 1), left, tag),
        )
