"""Vector messages: one buffer cut into a block per rank (Scatterv, Gatherv, Allgatherv, Alltoallv).

Programs written for mpi4py name such a message in any of these forms::

    buf                                  split evenly, datatype from the buffer
    [buf, datatype]                      split evenly
    [buf, counts]                        datatype from the buffer
    [buf, counts, datatype]
    [buf, (counts, displs), datatype]    (also [buf, (counts, displs)])
    [buf, counts, displs, datatype]

and they are read here as mpi4py reads them, so such programs run unchanged:

- no counts: the buffer's ``n`` elements are shared out as evenly as they go, the first
  ``n % p`` ranks getting one element more (``n // p + (n % p > i)``);
- counts as one int: every rank's count;
- no displacements: the running sum of the counts (blocks back to back);
- displacements as one int: a stride, block ``i`` starting at ``i * stride`` elements;
- a tuple in the counts position is the ``(counts, displs)`` pair (a list is counts).

Counts and displacements are in elements of the datatype.  Every bad spec is refused before
anything moves, with an error that names the call, the argument and what is wrong with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..constants import BOTTOM, IN_PLACE
from ..datatype import Datatype, from_code
from ..datatype.buffer import VectorBufferSpec, export_buffer, usable_layout
from ..datatype.predefined import BYTE
from ..errors import ERR_COUNT, ERR_TYPE
from ..errors import Exception as MPIException
from .checks import as_int

_EMPTY = memoryview(b"")
_FORMS = (
    "buf, [buf, datatype], [buf, counts], [buf, counts, datatype], "
    "[buf, (counts, displs), datatype] or [buf, counts, displs, datatype]"
)


def parse_vector_message(
    msg: Any,
    blocks: int,
    *,
    call: str,
    what: str,
    readonly: bool = True,
    in_place: bool = False,
) -> VectorBufferSpec:
    """The :class:`VectorBufferSpec` of ``msg`` cut into ``blocks`` blocks (one per rank).

    ``call`` and ``what`` (``"Comm.Scatterv"``, ``"sendbuf"``) head every error message.
    ``readonly=False`` is for receive buffers; ``in_place=True`` admits ``MPI.IN_PLACE``.
    """
    where = f"{call}: {what}"
    if msg is IN_PLACE:
        if not in_place:
            raise TypeError(
                f"{where}: MPI.IN_PLACE is not valid here (only as the send buffer of a "
                "collective, or the root's buffer of a rooted one)"
            )
        return VectorBufferSpec(_EMPTY, (0,) * blocks, (0,) * blocks, BYTE, in_place=True)
    obj, counts_spec, displs_spec, type_spec = _split(msg, where)
    datatype = None if type_spec is None else _datatype(type_spec, where)

    if obj is None or obj is BOTTOM:
        counts = _counts(counts_spec, blocks, 0, where)
        if any(counts):
            raise ValueError(
                f"{where}: MPI.BOTTOM (or None) as buffer with nonzero counts would address "
                "absolute memory, which ompy does not support; give a buffer object instead"
            )
        return VectorBufferSpec(_EMPTY, counts, (0,) * blocks, datatype or BYTE)

    try:
        buffer, inferred = export_buffer(obj, readonly=readonly, infer=datatype is None)
    except (TypeError, ValueError, BufferError) as error:
        raise type(error)(f"{where}: {_unprefixed(error)}") from None
    datatype = datatype or inferred
    assert datatype is not None
    try:
        usable_layout(datatype)  # committed, not freed
    except MPIException as error:
        detail = (error.detail or "").removeprefix("message: ")
        raise MPIException(error.Get_error_class(), f"{where}: {detail}") from None
    extent = datatype.extent
    if counts_spec is None:
        total = _whole_elements(buffer.nbytes, datatype, where)
    else:
        total = buffer.nbytes // extent if extent else 0
    counts = _counts(counts_spec, blocks, total, where)
    displs = _displs(displs_spec, counts, where)
    for rank, (count, displ) in enumerate(zip(counts, displs, strict=True)):
        if displ + count > total:
            raise ValueError(
                f"{where}: block {rank} ({count} x {datatype.Get_name()} at displacement "
                f"{displ}) does not fit in the buffer of {total} elements"
            )
    return VectorBufferSpec(buffer, counts, displs, datatype)


def even_split(total: int, blocks: int) -> tuple[int, ...]:
    """``total`` elements shared out over ``blocks`` ranks, the remainder on the first ranks."""
    each, rest = divmod(total, blocks) if blocks else (0, 0)
    return tuple(each + (rank < rest) for rank in range(blocks))


# -- pieces of the spec ---------------------------------------------------------------------------


def _split(msg: Any, where: str) -> tuple[Any, Any, Any, Any]:
    """(buffer, counts spec, displs spec, datatype spec) of a vector message."""
    if type(msg) is not list and type(msg) is not tuple:
        return msg, None, None, None
    items = len(msg)
    if items == 2:
        obj, second = msg
        if isinstance(second, Datatype | str):
            return obj, None, None, second
        counts, displs = _pair(second, where)
        return obj, counts, displs, None
    if items == 3:
        counts, displs = _pair(msg[1], where)
        return msg[0], counts, displs, msg[2]
    if items == 4:
        return msg[0], msg[1], msg[2], msg[3]
    raise ValueError(f"{where}: expecting {_FORMS}; a list or tuple of 2 to 4 items, got {items}")


def _pair(spec: Any, where: str) -> tuple[Any, Any]:
    """A tuple in the counts position is ``(counts, displs)``; anything else is the counts."""
    if type(spec) is not tuple:
        return spec, None
    if len(spec) != 2:
        raise ValueError(
            f"{where}: a tuple in the counts position is read as a (counts, displs) pair, as "
            f"mpi4py reads it, but this one has {len(spec)} items; give the counts as a list"
        )
    return spec[0], spec[1]


def _datatype(spec: Any, where: str) -> Datatype:
    if isinstance(spec, Datatype):
        if not spec:
            raise MPIException(ERR_TYPE, f"{where}: the datatype is DATATYPE_NULL")
        return spec
    if isinstance(spec, str):
        return from_code(spec)
    raise TypeError(
        f"{where}: expecting an MPI datatype or a type code such as 'd' as the last item, not "
        f"{type(spec).__name__} {spec!r}"
    )


def _whole_elements(nbytes: int, datatype: Datatype, where: str) -> int:
    extent = datatype.extent
    if nbytes == 0:
        return 0
    if extent <= 0:
        raise ValueError(
            f"{where}: cannot infer the counts: {datatype.Get_name()} has extent {extent}; "
            "give the counts"
        )
    total, rest = divmod(nbytes, extent)
    if rest:
        raise ValueError(
            f"{where}: cannot infer the counts: the buffer's {nbytes} bytes are not a whole "
            f"number of {datatype.Get_name()} elements of {extent} bytes; give the counts"
        )
    return total


def _counts(spec: Any, blocks: int, total: int, where: str) -> tuple[int, ...]:
    if spec is None:
        return even_split(total, blocks)
    if _is_int(spec):
        count = as_int(spec, f"{where}: counts")
        if count < 0:
            raise MPIException(ERR_COUNT, f"{where}: the count must not be negative, got {count}")
        return (count,) * blocks
    counts = _ints(spec, blocks, f"{where}: counts", "counts")
    for rank, count in enumerate(counts):
        if count < 0:
            raise MPIException(
                ERR_COUNT, f"{where}: counts must not be negative, got count {count} of rank {rank}"
            )
    return counts


def _displs(spec: Any, counts: tuple[int, ...], where: str) -> tuple[int, ...]:
    blocks = len(counts)
    if spec is None:
        starts, running = [], 0
        for count in counts:
            starts.append(running)
            running += count
        return tuple(starts)
    if _is_int(spec):
        stride = as_int(spec, f"{where}: displacements")
        displs = tuple(rank * stride for rank in range(blocks))
    else:
        displs = _ints(spec, blocks, f"{where}: displacements", "displacements")
    for rank, displ in enumerate(displs):
        if displ < 0:
            raise ValueError(
                f"{where}: displacement {displ} of rank {rank} lies before the start of the "
                "buffer; displacements must not be negative"
            )
    return displs


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _ints(spec: Any, blocks: int, where: str, name: str) -> tuple[int, ...]:
    if isinstance(spec, str | bytes | float) or not hasattr(spec, "__iter__"):
        raise TypeError(
            f"{where}: expecting an int or a sequence of {blocks} ints (one per rank), not "
            f"{type(spec).__name__} {spec!r}"
        )
    values = tuple(as_int(value, where) for value in spec)
    if len(values) != blocks:
        raise ValueError(f"{where}: expecting {blocks} {name} (one per rank), got {len(values)}")
    return values


def _unprefixed(error: BaseException) -> str:
    text = str(error)
    return text[len("message: ") :] if text.startswith("message: ") else text
