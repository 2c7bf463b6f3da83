"""Gatherv and scatterv (a block of any size per rank) and alltoallw (a datatype per peer).

Only the root knows every block's size, so the rules choose by communicator size alone (the
same on every member) and the tree algorithms carry the sizes along:

- ``linear`` (gatherv, scatterv): every block straight to or from the root, all posted at once.
- ``linear_sync`` (gatherv): the root invites one rank at a time with an empty message and
  receives its block before inviting the next, as Open MPI's ``linear_sync``; no rank sends
  before it is expected, so the root never holds more than one unexpected block (long blocks,
  many ranks).
- ``binomial`` (gatherv, scatterv): blocks travel along the binomial tree rooted at the root,
  each message the run of blocks of one subtree in relative rank order.  A gathering rank does
  not know its children's sizes: it takes each child's message out of matching with a matched
  probe, which gives the size, then receives it.  A scattering rank receives, ahead of its
  subtree's blocks, their sizes (one int64 per rank of the subtree, a length it knows), so it
  can cut what it forwards.  ``log2 p`` steps at the root instead of ``p - 1`` (short blocks).
- ``pairwise`` (alltoallw): step ``k`` sends to ``rank + k`` and receives from ``rank - k``;
  ``linear``: everything posted at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ompy.ompi.mca.coll.base import (
    binomial_children,
    binomial_parent,
    byte_spec,
    copy,
    recv,
    send,
    subtree_size,
)

from ..util import EMPTY, EMPTY_IN, Rounds, Subtree, Workspace

Block = Callable[[int], memoryview]


class SizedRecv:
    """A receive of a message whose size the receiver does not know: probe, then receive.

    Reading ``complete`` tries a matched probe until the message is there, then receives it
    into a buffer of its size; ``data`` is that buffer once complete.
    """

    __slots__ = ("_inner", "comm", "data", "source", "tag")

    def __init__(self, comm: Any, source: int, tag: int) -> None:
        self.comm, self.source, self.tag = comm, source, tag
        self._inner: Any = None
        self.data = EMPTY_IN

    @property
    def complete(self) -> bool:
        inner = self._inner
        if inner is None:
            pml = self.comm.pml
            message = pml.improbe(self.source, self.tag, self.comm)
            if message is None:
                return False
            self.data = memoryview(bytearray(message.count))
            inner = self._inner = pml.imrecv(byte_spec(self.data), message)
        return inner.complete

    @property
    def exception(self) -> BaseException | None:
        return None if self._inner is None else self._inner.exception


def _ascending(rank: int, root: int, size: int) -> list[int]:
    """The children of ``rank`` in the tree, lowest relative rank first (their runs in order)."""
    return list(reversed(binomial_children(rank, root, size)))


def binomial_gatherv(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, ws: Workspace, own: memoryview, block: Block | None, root: int
) -> Rounds:
    """Runs of blocks up the tree; ``block(r)`` is rank ``r``'s place at the root."""
    rank, size = comm.rank, comm.size
    parent = binomial_parent(rank, root, size)
    children = _ascending(rank, root, size)
    incoming = [SizedRecv(comm, child, tag) for child in children]
    if incoming:
        yield incoming
    if parent is not None:
        if not incoming:
            yield (send(comm, own, parent, tag),)
            return
        total = own.nbytes + sum(part.data.nbytes for part in incoming)
        run = ws.get(0, total)
        copy(run[: own.nbytes], own)
        start = own.nbytes
        for part in incoming:
            copy(run[start : start + part.data.nbytes], part.data)
            start += part.data.nbytes
        yield (send(comm, run, parent, tag),)
        return
    copy(block(rank), own)
    for child, part in zip(children, incoming, strict=True):
        first = (child - root) % size
        start = 0
        for relative in range(first, first + subtree_size(child, root, size)):
            place = block((relative + root) % size)
            copy(place, part.data[start : start + place.nbytes])
            start += place.nbytes


def linear_sync_gatherv(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, ws: Workspace, own: memoryview, block: Block | None, root: int
) -> Rounds:
    """The root invites each rank in turn (an empty message) and receives its block."""
    rank = comm.rank
    if rank != root:
        yield (recv(comm, EMPTY_IN, root, tag),)
        yield (send(comm, own, root, tag),)
        return
    copy(block(rank), own)
    for peer in range(comm.size):
        if peer != root:
            yield (recv(comm, block(peer), peer, tag), send(comm, EMPTY, peer, tag))


def binomial_scatterv(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, ws: Workspace, block: Block | None, own: memoryview | None, root: int
) -> Rounds:
    """Sizes, then runs of blocks, down the tree; ``own`` is ``None`` at a root ``IN_PLACE``."""
    rank, size = comm.rank, comm.size
    tree = Subtree.of(rank, root, size)
    parent = tree.parent
    if parent is None:
        sizes = np.array([block((r + root) % size).nbytes for r in range(size)], np.int64)
        starts = np.concatenate(([0], np.cumsum(sizes)))
        run = ws.get(0, int(starts[-1]))
        for r in range(size):
            copy(run[int(starts[r]) : int(starts[r + 1])], block((r + root) % size))
    else:
        sizes = np.zeros(tree.span, np.int64)
        yield (recv(comm, memoryview(sizes).cast("B"), parent, tag),)
        starts = np.concatenate(([0], np.cumsum(sizes)))
        run = ws.get(0, int(starts[-1]))
        yield (recv(comm, run, parent, tag),)
    requests = []
    for child, first, stop in tree.runs:
        header = memoryview(sizes[first:stop]).cast("B")
        requests.append(send(comm, header, child, tag))
        requests.append(send(comm, run[int(starts[first]) : int(starts[stop])], child, tag))
    if own is not None:
        if own.nbytes != sizes[0]:
            raise ValueError(
                f"scatterv: rank {rank} receives {own.nbytes} bytes but the root sends it "
                f"{int(sizes[0])}; the receive count and datatype must match the root's block"
            )
        copy(own, run[: int(starts[1])])
    if requests:
        yield requests


def pairwise_alltoallw(
    comm: Any, tag: int, ws: Workspace, outgoing: list[memoryview], incoming: list[memoryview]
) -> Rounds:
    """Step ``k``: send to ``rank + k``, receive from ``rank - k`` (one pair of messages)."""
    rank, size = comm.rank, comm.size
    copy(incoming[rank], outgoing[rank])
    for step in range(1, size):
        to, frm = (rank + step) % size, (rank - step) % size
        yield (send(comm, outgoing[to], to, tag), recv(comm, incoming[frm], frm, tag))


def linear_alltoallw(
    comm: Any, tag: int, ws: Workspace, outgoing: list[memoryview], incoming: list[memoryview]
) -> Rounds:
    """Every exchange posted at once, receives first."""
    rank, size = comm.rank, comm.size
    copy(incoming[rank], outgoing[rank])
    peers = [(rank + step) % size for step in range(1, size)]
    if peers:
        requests = [recv(comm, incoming[peer], peer, tag) for peer in peers]
        requests.extend(send(comm, outgoing[peer], peer, tag) for peer in peers)
        yield requests
