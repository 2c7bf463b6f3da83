"""Small pieces every algorithm of the component uses: scratch space, block arithmetic, folding.

Scratch space comes from a :class:`Workspace`.  A blocking collective uses its module's
workspace, whose buffers are kept and reused from call to call (fresh 8 MB buffers cost page
faults and zeroing on every call); a nonblocking collective gets a workspace of its own, since
several may be in flight at once, and inside each other's progress.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeAlias

import attrs

from ompy.ompi.mca.coll.base import (
    binomial_children,
    binomial_parent,
    combine,
    recv,
    send,
    subtree_size,
)

#: A schedule: a generator of rounds of requests (see ``ompy.ompi.mca.coll.base.schedule``).
Rounds: TypeAlias = Generator[Any, None, Any]

#: An empty message to send, and an empty (writable) place to receive one.
EMPTY = memoryview(b"")
EMPTY_IN = memoryview(bytearray(0))


@attrs.frozen
class Reduction:
    """One reducing call as its schedules see it: the buffers, the elements and the operation.

    Reduce, allreduce, reduce-scatter and scan schedules all take one, so that a schedule's
    signature names only what is its own (a root, the blocks' counts, inclusive or exclusive).
    """

    #: This rank's contribution (an allreduce's: the receive buffer, already filled).
    source: memoryview
    #: Where this rank's result goes; ``None`` where it gets none (a reduce away from the root).
    target: memoryview | None
    #: Elements in ``source`` (of a reduce-scatter: every block's together).
    count: int
    datatype: Any
    op: Any

    @property
    def commutative(self) -> bool:
        return bool(self.op.Is_commutative())

    @property
    def extent(self) -> int:
        return int(self.datatype.extent)

    def combine(
        self, comm: Any, inmem: memoryview, inoutmem: memoryview, count: int | None = None
    ) -> None:
        """``inoutmem = inmem op inoutmem`` on ``count`` elements (all: ``None``)."""
        combine(
            comm, self.op, self.datatype, inmem, inoutmem, self.count if count is None else count
        )


@attrs.frozen
class Subtree:
    """A rank's subtree in the binomial tree rooted at ``root``, as gather and scatter walk it.

    It holds the relative ranks ``relative .. relative + span - 1`` (contiguous), so its blocks
    travel as one run; each child's subtree is a run inside it.
    """

    span: int
    parent: int | None
    #: ``(child, first, stop)`` per child, farthest first: the child's run is positions
    #: ``first .. stop - 1`` of this subtree's run.
    runs: tuple[tuple[int, int, int], ...]

    @classmethod
    def of(cls, rank: int, root: int, size: int) -> Subtree:
        relative = (rank - root) % size
        runs = []
        for child in binomial_children(rank, root, size):
            first = (child - root) % size - relative
            runs.append((child, first, first + subtree_size(child, root, size)))
        parent = binomial_parent(rank, root, size)
        return cls(subtree_size(rank, root, size), parent, tuple(runs))


class Workspace:
    """Scratch buffers of one collective call, named by their use (``get(0, n)``, ``get("x", n)``).

    A buffer grows when a call needs more than it holds and is reused otherwise, so repeated
    calls of one size allocate nothing.  Its contents are undefined on return.  ``segment`` is
    the size in bytes of the pieces segmented algorithms cut long messages into.
    """

    __slots__ = ("_buffers", "segment")

    def __init__(self, segment: int = 0) -> None:
        self._buffers: dict[Any, bytearray] = {}
        self.segment = segment

    def get(self, slot: Any, nbytes: int) -> memoryview:
        """A writable byte view of ``nbytes`` bytes of the buffer named ``slot``."""
        buffer = self._buffers.get(slot)
        if buffer is None or len(buffer) < nbytes:
            buffer = self._buffers[slot] = bytearray(nbytes)
        return memoryview(buffer)[:nbytes]


def pof2_below(size: int) -> int:
    """The largest power of two not above ``size`` (``size >= 1``)."""
    return 1 << (size.bit_length() - 1)


def is_pof2(size: int) -> bool:
    """Whether ``size`` is a power of two."""
    return size > 0 and size & (size - 1) == 0


def split(count: int, parts: int) -> tuple[list[int], list[int]]:
    """``count`` elements cut into ``parts`` nearly equal runs: their counts and offsets."""
    base, extra = divmod(count, parts)
    counts = [base + (1 if index < extra else 0) for index in range(parts)]
    offsets = [0] * parts
    for index in range(1, parts):
        offsets[index] = offsets[index - 1] + counts[index - 1]
    return counts, offsets


def fold_in(comm: Any, tag: int, data: memoryview, tmp: memoryview, red: Reduction) -> Rounds:
    """Bring ``size`` ranks down to a power of two, keeping rank order (MPICH's fold).

    Among the first ``2 * (size - pof2)`` ranks each even rank sends ``data`` to the odd rank
    above it, which computes ``even op odd`` into its ``data`` (``tmp`` receives; ``red.count``
    elements); ranks above take part unchanged.  Returns the rank's new rank among the ``pof2``
    survivors, or ``-1`` for a rank that dropped out.  The survivor ``new`` has old rank
    :func:`old_rank`.
    """
    rank, size = comm.rank, comm.size
    remainder = size - pof2_below(size)
    if rank < 2 * remainder:
        if rank % 2 == 0:
            yield (send(comm, data, rank + 1, tag),)
            return -1
        yield (recv(comm, tmp, rank - 1, tag),)
        red.combine(comm, tmp, data)
        return rank // 2
    return rank - remainder


def old_rank(new: int, remainder: int) -> int:
    """The rank (before :func:`fold_in`) of the survivor with new rank ``new``."""
    return new * 2 + 1 if new < remainder else new + remainder
