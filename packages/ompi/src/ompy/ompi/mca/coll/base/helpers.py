"""Building blocks shared by the algorithms of every coll component.

Point-to-point on raw bytes (the PML's requests, standard mode, on a collective's tag)::

    request = send(comm, view, dest, tag)     # view: a flat byte memoryview
    request = recv(comm, view, source, tag)   # writable; the message must fit

Local steps: :func:`copy` (memoryview to memoryview, the fast copy on these machines),
:func:`combine` (``inout = in op inout`` through the op framework's kernel), :func:`scratch`
(a zeroed bytearray's view).  Trees: :func:`binomial_parent` and :func:`binomial_children`
of a binomial tree rooted anywhere, the tree of MPICH's and Open MPI's basic algorithms, and
:func:`binomial_bcast`, the schedule that sends a view down it.
Views: :func:`block_view` of a regular or vector spec, :func:`region` of a spec's buffer.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ....datatype.buffer import BufferSpec, VectorBufferSpec
from ....datatype.predefined import BYTE
from ...pml.interface import SendMode

_STANDARD = SendMode.STANDARD


def byte_spec(view: memoryview) -> BufferSpec:
    """A BufferSpec of ``view``'s raw bytes (what the collectives hand to the PML)."""
    return BufferSpec(view, view.nbytes, BYTE, view)


def send(comm: Any, view: memoryview, dest: int, tag: int) -> Any:
    """Start sending the bytes of ``view`` to ``dest``; the PML's send request."""
    return comm.pml.isend(BufferSpec(view, view.nbytes, BYTE, view), dest, tag, comm, _STANDARD)


def recv(comm: Any, view: memoryview, source: int, tag: int) -> Any:
    """Post a receive into ``view`` from ``source``; the PML's receive request."""
    return comm.pml.irecv(BufferSpec(view, view.nbytes, BYTE, view), source, tag, comm)


def copy(target: memoryview, source: memoryview) -> None:
    """Copy ``source`` into ``target`` (same length; a no-op when they are the same memory)."""
    if target.nbytes:
        target[:] = source


def combine(  # noqa: PLR0917 (the algorithms call it positionally, on the hot path)
    comm: Any, op: Any, datatype: Any, inmem: Any, inoutmem: Any, count: int
) -> None:
    """``inoutmem = inmem op inoutmem`` on ``count`` elements (``inmem``: the lower ranks).

    The kernel comes from the op framework of ``comm``'s instance.
    """
    if count:
        comm.instance.op.kernel(op, datatype)(inmem, inoutmem, count)


def scratch(nbytes: int) -> memoryview:
    """A writable byte view of ``nbytes`` fresh bytes (temporary space of an algorithm)."""
    return memoryview(bytearray(nbytes))


def region(spec: BufferSpec, count: int) -> memoryview:
    """``count`` elements of ``spec``'s buffer from its offset (longer than ``spec.view``).

    For operations whose in-place input is larger than the output (reduce_scatter_block).
    """
    start = spec.offset
    return spec.buffer[start : start + count * spec.datatype.extent]


def block_view(spec: VectorBufferSpec, index: int) -> memoryview:
    """The bytes of block ``index`` of ``spec`` (counts and displacements in elements)."""
    return spec.block(index)


def binomial_parent(rank: int, root: int, size: int) -> int | None:
    """The parent of ``rank`` in the binomial tree rooted at ``root`` (``None`` at the root).

    In relative ranks (``(rank - root) mod size``), the parent clears the lowest set bit.
    """
    relative = (rank - root) % size
    if relative == 0:
        return None
    return ((relative & (relative - 1)) + root) % size


def binomial_children(rank: int, root: int, size: int) -> list[int]:
    """The children of ``rank`` in the binomial tree rooted at ``root``, farthest first.

    The farthest child roots the largest subtree, so sending to it first starts the longest
    chain of the broadcast soonest.
    """
    relative = (rank - root) % size
    children = []
    mask = 1
    while mask < size and not relative & mask:
        mask <<= 1
    # ``mask`` is the lowest set bit of ``relative`` (or past size for the root).
    mask >>= 1
    while mask > 0:
        child = relative + mask
        if child < size:
            children.append((child + root) % size)
        mask >>= 1
    return children


def binomial_bcast(comm: Any, tag: int, view: memoryview, root: int) -> Generator[Any, None, None]:
    """The schedule of a binomial broadcast: ``view`` from the parent, then to every child."""
    parent = binomial_parent(comm.rank, root, comm.size)
    if parent is not None:
        yield (recv(comm, view, parent, tag),)
    children = binomial_children(comm.rank, root, comm.size)
    if children:
        yield [send(comm, view, child, tag) for child in children]


def subtree_size(rank: int, root: int, size: int) -> int:
    """How many ranks the subtree of ``rank`` holds in the binomial tree rooted at ``root``.

    They are the relative ranks ``relative .. relative + subtree_size - 1``, contiguous, which
    is what lets a binomial gather or scatter move whole runs of blocks.
    """
    relative = (rank - root) % size
    lowest = relative & -relative if relative else 1 << max(size - 1, 0).bit_length()
    return min(lowest, size - relative)
