"""The buffers of a program's hot calls, read in one step: whole contiguous arrays.

A program's small collectives in a loop (``Allreduce(x, y)``, ``Bcast(a)``, ``Reduce(x, y)``)
nearly always pass whole, C-contiguous numpy arrays (or ``bytes``/``bytearray``) of a basic
native type.  :func:`plain_spec` reads such a buffer with the fewest steps: one export, one
table lookup for the datatype and its element size, one cast to bytes.  Anything else (a
``[buf, count, datatype]`` list, a derived or non-contiguous layout, a read-only receive
buffer, ``MPI.IN_PLACE``) answers ``None``, and the caller takes the general path
(:func:`~ompy.ompi.datatype.buffer.parse_buffer` and the argument checks of
:mod:`.collective`), which accepts every form and raises the errors.  Both paths make the same
spec for the buffers this one accepts.

Point-to-point needs less: ``Send`` and ``Recv`` hand the PML bytes, so :func:`flat_view`
gives only the flat byte view of such a buffer.  Both readers share the table of formats, so
the two hot paths accept the same buffers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..datatype import Datatype
from ..datatype.buffer import BufferSpec
from ..datatype.predefined import TYPECHARS

#: Element formats of the buffers :func:`flat_view` takes as they are: the one-character
#: native formats ``parse_buffer`` maps to a predefined datatype.
FLAT_FORMATS = frozenset(code for code in "?bhilqBHILQfdg" if code in TYPECHARS)

#: Buffer format -> (datatype, element size): the native single-element formats numpy arrays
#: export for their basic dtypes (``bytes`` and ``bytearray`` export ``"B"``), whose
#: predefined datatype is plain (its elements are exactly their bytes).
_FORMATS: dict[str, tuple[Datatype, int]] = {
    code: (TYPECHARS[code], TYPECHARS[code].layout.size)
    for code in FLAT_FORMATS
    if TYPECHARS[code].layout.plain_named
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


def flat_view(buf: Any, readonly: bool) -> memoryview | None:
    """The flat byte view of a whole contiguous numpy array, bytes or bytearray; else None.

    ``Send`` and ``Recv`` hand the PML the bytes only: for these buffers ``parse_buffer``
    would accept the same view (its fast case), and everything else (a ``[buf, count,
    datatype]`` list, a strided array, a read-only receive buffer) goes through it and its
    errors.  When the PML must convert typed data (``pml.raw_views`` false: a heterogeneous
    job) the calls give it buffer specs, which keep the datatype.

    Told by the exact type, cheapest first: a bytearray's (or, to send, a bytes') view is
    always flat bytes, so only an array's view is looked at; making the view is most of the
    cost (numpy's export alone is about half), so it is made once and each property read once.
    """
    kind = type(buf)
    if kind is bytearray or (kind is bytes and readonly):
        return memoryview(buf)
    if kind is not np.ndarray:
        return None  # (a bytes receive buffer is parse_buffer's to refuse)
    view = memoryview(buf)
    code = view.format
    if code not in FLAT_FORMATS or not view.c_contiguous or (view.readonly and not readonly):
        return None
    if code != "B" or view.ndim != 1:
        try:
            view = view.cast("B")
        except TypeError:  # an empty array with a zero in its shape, (3, 0): parse_buffer's
            return None
    return view


__all__ = ["flat_view", "plain_spec"]
