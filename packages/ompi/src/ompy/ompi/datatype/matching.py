"""Datatypes found rather than built: Fortran kinds by range or size, value/index pairs.

``Create_f90_integer``/``_real``/``_complex`` return the Fortran type of the smallest kind with
at least the decimal range (and precision) asked for, as Fortran's ``SELECTED_INT_KIND`` and
``SELECTED_REAL_KIND`` choose it; the result is predefined but remembers the call (its combiner
is ``COMBINER_F90_*``).  ``Match_size`` finds the Fortran type of a given size in a type class.
``Get_value_index`` returns the pair type for ``MINLOC``/``MAXLOC`` of a value type and an
index type: the named one (``MPI.DOUBLE_INT``) where MPI has it, a new ``{value; index}`` pair
with C alignment for other integer or floating value types and integer index types, and
``DATATYPE_NULL`` for anything else, as MPI 4.1 allows.

Ranges and precisions come from numpy's view of the machine's types (``finfo``/``iinfo``),
which is what the Fortran intrinsics report for the same formats.
"""

from __future__ import annotations

import math
import operator
from typing import TYPE_CHECKING, Any, Final, Self

import attrs
import numpy as np

from ompy.opal.datatype.description import Description

from ..constants import UNDEFINED
from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from .envelope import (
    COMBINER_F90_COMPLEX,
    COMBINER_F90_INTEGER,
    COMBINER_F90_REAL,
    COMBINER_VALUE_INDEX,
    Envelope,
)
from .layout import Layout

if TYPE_CHECKING:
    from .datatype import Datatype

# Type classes of Match_size: Open MPI 5's values; LOGICAL (MPI 4.1) is ompy's own.
TYPECLASS_INTEGER: Final = 1
TYPECLASS_REAL: Final = 2
TYPECLASS_COMPLEX: Final = 3
TYPECLASS_LOGICAL: Final = 4

#: The sized Fortran types of each class, by the name prefix of their MPI names.
_CLASS_PREFIX: Final = {
    TYPECLASS_INTEGER: "INTEGER",
    TYPECLASS_REAL: "REAL",
    TYPECLASS_COMPLEX: "COMPLEX",
    TYPECLASS_LOGICAL: "LOGICAL",
}


class Matching:
    """The class methods of :class:`~ompy.ompi.datatype.datatype.Datatype` that find types."""

    __slots__ = ()

    if TYPE_CHECKING:

        @classmethod
        def _of(cls, layout: Layout) -> Self: ...

    @classmethod
    def Get_value_index(cls, value: Datatype, index: Datatype) -> Self:
        """Return a predefined pair datatype."""
        from .constructors import usable
        from .predefined import DATATYPE_NULL, PAIRS

        call = "Get_value_index"
        value_layout = usable(value, call, "value")
        index_layout = usable(index, call, "index")
        named = PAIRS.get((value_layout.key, index_layout.key)) if value_layout.predefined else None
        if named is not None and index_layout.predefined:
            return named  # type: ignore[return-value]
        value_basic = value_layout.description.single_basic
        index_basic = index_layout.description.single_basic
        if (
            not (value_layout.predefined and index_layout.predefined)
            or value_basic is None
            or index_basic is None
            or value_basic.kind not in ("signed", "unsigned", "float")
            or index_basic.kind not in ("signed", "unsigned")
        ):
            return DATATYPE_NULL  # type: ignore[return-value]
        layout = pair_layout("", value_basic.dtype, index_basic.dtype, value_layout, index_layout)
        from .datatype import Datatype

        layout.envelope = Envelope(
            COMBINER_VALUE_INDEX,
            datatypes=(Datatype._of(value_layout), Datatype._of(index_layout)),
        )
        return cls._of(layout)

    @classmethod
    def Create_f90_integer(cls, r: int) -> Self:
        """Return a bounded integer datatype."""
        r = _int(r, "r", "Create_f90_integer")
        for size in (1, 2, 4, 8):
            if _integer_range(size) >= r:
                return cls._of(_f90(f"INTEGER{size}", COMBINER_F90_INTEGER, (r,)))
        raise MPIException(
            ERR_ARG,
            f"Create_f90_integer: no Fortran integer kind has a decimal range of {r} digits "
            f"(INTEGER8 has {_integer_range(8)})",
        )

    @classmethod
    def Create_f90_real(cls, p: int, r: int) -> Self:
        """Return a bounded real datatype."""
        key = _real_kind("Create_f90_real", "REAL", p, r)
        return cls._of(_f90(key, COMBINER_F90_REAL, (p, r)))

    @classmethod
    def Create_f90_complex(cls, p: int, r: int) -> Self:
        """Return a bounded complex datatype."""
        key = _real_kind("Create_f90_complex", "COMPLEX", p, r)
        return cls._of(_f90(key, COMBINER_F90_COMPLEX, (p, r)))

    @classmethod
    def Match_size(cls, typeclass: int, size: int) -> Self:
        """Find a datatype matching a specified size in bytes."""
        from .predefined import BY_KEY

        call = "Match_size"
        typeclass = _int(typeclass, "typeclass", call)
        size = _int(size, "size", call)
        prefix = _CLASS_PREFIX.get(typeclass)
        if prefix is None:
            raise MPIException(
                ERR_ARG,
                f"{call}: typeclass {typeclass} is not TYPECLASS_INTEGER, TYPECLASS_REAL, "
                "TYPECLASS_COMPLEX or TYPECLASS_LOGICAL",
            )
        datatype = BY_KEY.get(f"{prefix}{size}")
        if datatype is None or not datatype:
            have = [
                key.removeprefix(prefix)
                for key, found in BY_KEY.items()
                if key.startswith(prefix) and key[len(prefix) :].isdigit() and found
            ]
            raise MPIException(
                ERR_ARG,
                f"{call}: no Fortran {prefix} type is {size} bytes here (sizes available: "
                f"{', '.join(have)})",
            )
        return datatype  # type: ignore[return-value]


def pair_layout(
    name: str, value: np.dtype, index: np.dtype, value_layout: Layout, index_layout: Layout
) -> Layout:
    """The layout of a ``{value; index}`` C struct (aligned, padded to its alignment).

    The padding is the struct's alignment, not an explicit upper bound marker (which
    ``resized`` would set, and which would then override the bounds of types built from it).
    """
    dtype = np.dtype([("value", value), ("index", index)], align=True)
    index_offset = dtype.fields["index"][1]  # type: ignore[index]
    struct = Description.struct(
        [1, 1], [0, index_offset], [value_layout.description, index_layout.description]
    )
    description = attrs.evolve(struct, ub=struct.lb + dtype.itemsize)
    return Layout(
        name=name,
        description=description,
        envelope=Envelope(0),
        dtype=dtype,
        committed=True,
    )


def _f90(key: str, combiner: int, integers: tuple[int, ...]) -> Layout:
    """A parametrized Fortran type: the sized type ``key``, remembering the call."""
    from .predefined import BY_KEY

    sized = BY_KEY[key].layout
    return attrs.evolve(
        sized,
        envelope=Envelope(combiner, integers=integers),
        element=sized,
        refs=1,
        attributes=type(sized.attributes)(),
    )


def _int(value: Any, what: str, call: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{call}: {what} must be an int, not {type(value).__name__}") from None


def _integer_range(size: int) -> int:
    return math.floor(math.log10(np.iinfo(f"i{size}").max))


def _real_range(dtype: np.dtype) -> tuple[int, int]:
    """Fortran's ``PRECISION`` and ``RANGE`` of a real format."""
    info = np.finfo(dtype)
    decades = min(math.log10(float(info.max)), -math.log10(float(info.smallest_normal)))
    return int(info.precision), math.floor(decades)


def _real_kind(call: str, prefix: str, p: Any, r: Any) -> str:
    """The sized type (``REAL4``, ``COMPLEX16``, ...) of the smallest real kind with at least
    precision ``p`` and range ``r`` (either may be ``UNDEFINED``)."""
    from .predefined import BY_KEY

    p = _int(p, "p", call)
    r = _int(r, "r", call)
    if p == UNDEFINED and r == UNDEFINED:
        raise MPIException(ERR_ARG, f"{call}: p and r cannot both be UNDEFINED")
    kinds = []
    for size in (4, 8):
        key = f"{prefix}{size if prefix == 'REAL' else 2 * size}"
        datatype = BY_KEY.get(key)
        if datatype is None or not datatype:
            continue
        precision, decades = _real_range(np.dtype(f"f{size}"))
        kinds.append((precision, decades))
        if (p == UNDEFINED or precision >= p) and (r == UNDEFINED or decades >= r):
            return key
    best = ", ".join(f"precision {q} and range {d}" for q, d in kinds)
    raise MPIException(
        ERR_ARG,
        f"{call}: no Fortran {prefix.lower()} kind has precision {p} and range {r} here "
        f"(the kinds have {best})",
    )
