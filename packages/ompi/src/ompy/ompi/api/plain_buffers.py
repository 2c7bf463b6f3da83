"""The buffers of a program's hot collectives, read in one step: whole contiguous arrays.

A program's small collectives in a loop (``Allreduce(x, y)``, ``Bcast(a)``, ``Reduce(x, y)``)
nearly always pass whole, C-contiguous numpy arrays (or ``bytes``/``bytearray``) of a basic
native type.  :func:`plain_spec` reads such a buffer with the fewest steps: one export, one
table lookup for the datatype and its element size, one cast to bytes.  Anything else (a
``[buf, count, datatype]`` list, a derived or non-contiguous layout, a read-only receive
buffer, ``MPI.IN_PLACE``) answers ``None``, and the caller takes the general path
(:func:`~ompy.ompi.datatype.buffer.parse_buffer` and the argument checks of
:mod:`.collective`), which accepts every form and raises the errors.  Both paths make the same
spec for the buffers this one accepts.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..datatype import Datatype
from ..datatype.buffer import BufferSpec
from ..datatype.predefined import TYPECHARS

#: Buffer format -> (datatype, element size): the native single-element formats numpy arrays
#: export for their basic dtypes (``bytes`` and ``bytearray`` export ``"B"``), whose
#: predefined datatype is plain (its elements are exactly their bytes).
_FORMATS: dict[str, tuple[Datatype, int]] = {
    code: (TYPECHARS[code], TYPECHARS[code].layout.size)
    for code in "?bhilqBHILQfdg"
    if code in TYPECHARS and TYPECHARS[code].layout.plain_named
}


def plain_spec(buf: Any, *, writable: bool) -> BufferSpec | None:
    """The spec of ``buf`` if it is a whole contiguous buffer of a basic native type, else None.

    ``writable`` asks for a buffer the operation may write (a receive buffer): a read-only
    one answers None, so the general path raises its error.
    """
    kind = type(buf)
    if kind is not np.ndarray and kind is not bytes and kind is not bytearray:
        return None
    view = memoryview(buf)
    found = _FORMATS.get(view.format)
    if found is None or not view.c_contiguous or (writable and view.readonly):
        return None
    if view.ndim != 1 or view.format != "B":
        if not view.nbytes:
            return None  # the general path describes an empty array with a zero in its shape
        view = view.cast("B")
    datatype, itemsize = found
    return BufferSpec(view, view.nbytes // itemsize, datatype, view)


__all__ = ["plain_spec"]
