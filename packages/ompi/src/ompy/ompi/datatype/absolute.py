"""Messages at absolute addresses: ``[MPI.BOTTOM, count, datatype]``.

A datatype built from addresses (``MPI.Get_address(array)`` as the displacements of
``Create_struct`` or ``Create_hindexed``) describes data wherever it lies in the process; with
``MPI.BOTTOM`` (address 0) as the buffer, element 0's displacement 0 is address 0, so each
displacement *is* the address of its data.  :func:`absolute_memory` gives the convertor a byte
view over the addresses the data spans (no copy; the gaps between the pieces are never touched:
the convertor reads and writes the typemap's bytes only).

As in C, the program keeps the memory alive while the message uses it; ompy cannot check that
an address belongs to a live object.  It does refuse what cannot be an address: data below the
first page (a datatype built from small displacements, not from ``Get_address``).
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Final

from ..errors import ERR_BUFFER
from ..errors import Exception as MPIException
from .layout import Layout

#: No object lives in the first page: data below it means displacements, not addresses.
LOWEST_ADDRESS: Final = mmap.PAGESIZE


def absolute_memory(layout: Layout, count: int, call: str) -> tuple[memoryview, int]:
    """A writable byte view over the absolute addresses ``count`` elements of ``layout`` span,
    and the origin to give the convertor (the view's byte that is address 0: negative)."""
    description = layout.description
    if count == 0 or description.size == 0:
        return memoryview(bytearray()), 0
    span = (count - 1) * description.extent
    low = description.true_lb + min(0, span)
    high = description.true_ub + max(0, span)
    if low < LOWEST_ADDRESS:
        name = layout.name or "the datatype"
        raise MPIException(
            ERR_BUFFER,
            f"{call}: the buffer is MPI.BOTTOM, so the displacements of {name} are absolute "
            f"addresses, but its data starts at {low}, which is no address of an object; build "
            "the datatype from MPI.Get_address(...) of the arrays, or pass a buffer",
        )
    raw = (ctypes.c_ubyte * (high - low)).from_address(low)
    return memoryview(raw).cast("B"), -low
