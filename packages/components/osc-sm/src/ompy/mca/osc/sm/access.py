"""Moving data between an origin buffer and a target rank's memory, mapped in this process.

In a shared-memory window an RMA call is an ordinary copy: the target's memory is a slice of
the segment every rank maps.  The target side of a call (``count`` elements of a datatype at a
displacement) becomes a buffer spec over that slice, exactly like a message buffer: a flat view
when the layout is contiguous, a convertor when it is not, so derived datatypes work on either
side.  Accumulates combine element by element with the op framework's kernel for the datatype's
predefined element type, under a record lock of the target bytes (:mod:`.locks`), which makes
them atomic per element against every other accumulate on those bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ompy.ompi.api.staging import reduction_type
from ompy.ompi.datatype import Datatype
from ompy.ompi.datatype.buffer import BufferSpec, spec_of
from ompy.ompi.errors import ERR_RMA_RANGE, ERR_TYPE
from ompy.ompi.errors import Exception as MPIException

#: ``kernel(source, target, count)`` stores ``source op target`` into ``target``.
Kernel = Callable[[memoryview, memoryview, int], Any]


def target_spec(
    memory: memoryview, offset: int, count: int, datatype: Datatype, *, call: str, rank: int
) -> BufferSpec:
    """``count`` elements of ``datatype`` at byte ``offset`` of ``memory`` (a rank's window).

    Raises ``MPI.Exception`` with ``ERR_RMA_RANGE`` when they do not lie inside the window.
    """
    if offset < 0:
        raise MPIException(
            ERR_RMA_RANGE,
            f"{call}: target displacement gives byte {offset} of rank {rank}'s window; "
            "displacements must not be negative",
        )
    try:
        return spec_of(memory, offset, count, datatype, readonly=False)
    except ValueError as error:
        raise MPIException(
            ERR_RMA_RANGE,
            f"{call}: {count} element(s) of {datatype.Get_name() or 'a derived datatype'} at "
            f"byte {offset} of rank {rank}'s window fall outside its {memory.nbytes} bytes "
            f"({error})",
        ) from None


def span(spec: BufferSpec) -> tuple[int, int]:
    """The bytes ``[low, high)`` of ``spec.buffer`` its elements touch (empty when no data)."""
    if not spec.count:
        return spec.offset, spec.offset
    layout = spec.datatype.layout
    if spec.convertor is None:
        # A contiguous layout's view starts at the offset (spec_of); a derived layout whose
        # data turned out to be one piece starts at its true lower bound (the convertor's).
        start = spec.offset if layout.contiguous else spec.offset + layout.true_lb
        return start, start + spec.view.nbytes
    reach = (spec.count - 1) * layout.extent
    low = spec.offset + layout.true_lb + min(0, reach)
    high = spec.offset + layout.true_lb + layout.true_extent + max(0, reach)
    return low, high


def read(spec: BufferSpec) -> memoryview:
    """The packed bytes of ``spec``: its own view when contiguous, else a packed copy."""
    return spec.packed()


def write(spec: BufferSpec, data: memoryview) -> None:
    """Store the packed stream ``data`` into the elements ``spec`` describes."""
    if data.nbytes != spec.nbytes:
        raise MPIException(
            ERR_TYPE,
            f"origin and target describe different amounts of data ({data.nbytes} and "
            f"{spec.nbytes} bytes): their type signatures must match",
        )
    if spec.convertor is None:
        spec.view[:] = data
    else:
        spec.convertor.unpack_all(data)


def copy_of(spec: BufferSpec) -> memoryview:
    """A private packed copy of ``spec`` (its data may change after we read it)."""
    return memoryview(bytearray(spec.packed()))


def element_type(spec: BufferSpec, call: str) -> tuple[Datatype, int]:
    """The predefined type the accumulate combines on, and how many of them ``spec`` holds."""
    element, per = reduction_type(spec.datatype, call)
    return element, spec.count * per


def matching_elements(origin: BufferSpec, target: BufferSpec, call: str) -> tuple[Datatype, int]:
    """The common element type of ``origin`` and ``target`` and their number of elements.

    MPI requires both to be made of the same predefined type, the same number of times; two
    predefined types with the same machine representation (``LONG`` and ``INT64_T`` on LP64)
    are taken as one, as C MPI libraries do.
    """
    t_element, t_count = element_type(target, call)
    o_element, o_count = element_type(origin, call)
    same = o_element.layout is t_element.layout or o_element.layout.dtype == t_element.layout.dtype
    if not same or o_count != t_count:
        raise MPIException(
            ERR_TYPE,
            f"{call}: the origin holds {o_count} x {o_element.Get_name() or 'derived'} but the "
            f"target {t_count} x {t_element.Get_name() or 'derived'}; an accumulate needs the "
            "same predefined element type, the same number of times, on both sides",
        )
    return t_element, t_count


def combine(kernel: Kernel, source: memoryview, target: BufferSpec, count: int) -> None:
    """``target = source op target`` for ``count`` predefined elements (``source`` packed)."""
    if target.convertor is None:
        kernel(source, target.view, count)
        return
    staged = copy_of(target)
    kernel(source, staged, count)
    target.convertor.unpack_all(staged)


def equal_bytes(a: memoryview, b: memoryview) -> bool:
    """Byte-wise equality (``Compare_and_swap`` compares bits, as Open MPI does)."""
    return bool(np.array_equal(np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)))
