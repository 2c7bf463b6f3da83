"""Datatypes: the :class:`Datatype` handle, the predefined datatypes and buffer specifications.

``predefined`` holds ``MPI.INT``, ``MPI.DOUBLE`` and the rest; ``constructors``, ``matching``
and ``packing`` give the handle its ``Create_*``, Fortran/pair lookups and ``Pack``/``Unpack``;
``envelope`` records how each datatype was made.  ``buffer`` turns what a program passes to an
uppercase method (``buf``, ``[buf, MPI.DOUBLE]``, ``[buf, count, MPI.DOUBLE]``, ...) into a
:class:`~ompy.ompi.datatype.buffer.BufferSpec` the PML can move.
"""

from __future__ import annotations

from .constructors import (
    DISTRIBUTE_BLOCK,
    DISTRIBUTE_CYCLIC,
    DISTRIBUTE_DFLT_DARG,
    DISTRIBUTE_NONE,
)
from .datatype import Datatype, Layout, require_committed
from .envelope import COMBINER_NAMES
from .matching import TYPECLASS_COMPLEX, TYPECLASS_INTEGER, TYPECLASS_LOGICAL, TYPECLASS_REAL
from .predefined import BY_KEY, DATATYPE_NULL, TYPECHARS, TYPESTRS, by_key, from_code

#: ``MPI.COMBINER_NAMED``, ``MPI.COMBINER_VECTOR``, ... by their names in ``MPI``.
COMBINERS: dict[str, int] = {f"COMBINER_{name}": value for value, name in COMBINER_NAMES.items()}

__all__ = [
    "BY_KEY",
    "COMBINERS",
    "DATATYPE_NULL",
    "DISTRIBUTE_BLOCK",
    "DISTRIBUTE_CYCLIC",
    "DISTRIBUTE_DFLT_DARG",
    "DISTRIBUTE_NONE",
    "TYPECHARS",
    "TYPECLASS_COMPLEX",
    "TYPECLASS_INTEGER",
    "TYPECLASS_LOGICAL",
    "TYPECLASS_REAL",
    "TYPESTRS",
    "Datatype",
    "Layout",
    "by_key",
    "from_code",
    "require_committed",
]
