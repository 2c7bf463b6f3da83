"""Datatypes: the :class:`Datatype` handle, the predefined datatypes and buffer specifications.

``predefined`` holds ``MPI.INT``, ``MPI.DOUBLE`` and the rest; ``buffer`` turns what a program
passes to an uppercase method (``buf``, ``[buf, MPI.DOUBLE]``, ``[buf, count, MPI.DOUBLE]``, ...)
into a :class:`~ompy.ompi.datatype.buffer.BufferSpec` the PML can move.
"""

from __future__ import annotations

from .datatype import Datatype, Layout
from .predefined import BY_KEY, DATATYPE_NULL, TYPECHARS, TYPESTRS, by_key, from_code

__all__ = [
    "BY_KEY",
    "DATATYPE_NULL",
    "TYPECHARS",
    "TYPESTRS",
    "Datatype",
    "Layout",
    "by_key",
    "from_code",
]
