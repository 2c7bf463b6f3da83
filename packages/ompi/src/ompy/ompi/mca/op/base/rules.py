"""Which predefined operation MPI defines on which datatype (MPI 4.1, section 6.9.2).

The standard sorts the predefined datatypes into classes and names the classes each operation
applies to; everything else is an ``MPI_ERR_OP`` error.  This table is the standard's, not a
component's: it is checked before any component is asked, so a combination MPI forbids fails
the same way whatever is installed, and a component only supplies loops.

``MPI_REPLACE`` and ``MPI_NO_OP`` exist for one-sided accumulate operations only (Open MPI
refuses them in reductions too); :func:`check` admits them when ``accumulate`` is true, on every
predefined datatype, as ``MPI_Accumulate`` does.
"""

from __future__ import annotations

import enum
from typing import Final

from ....datatype import Datatype
from ....datatype.datatype import null_datatype_error
from ....errors import ERR_OP
from ....errors import Exception as MPIException
from ..interface import Intrinsic


class TypeClass(enum.Enum):
    """The standard's classes of predefined datatypes, as far as reductions care."""

    C_INTEGER = "C integer"
    MULTI_LANGUAGE = "multi-language (address, offset, count)"
    FLOATING_POINT = "floating point"
    LOGICAL = "logical"
    COMPLEX = "complex"
    BYTE = "byte"
    PAIR = "value/index pair"
    #: Characters and packed data: no reduction is defined on them.
    OTHER = "character or packed"


_CLASS_OF_KEY: Final[dict[str, TypeClass]] = {
    **dict.fromkeys(
        (
            "SIGNED_CHAR",
            "SHORT",
            "INT",
            "LONG",
            "LONG_LONG",
            "UNSIGNED_CHAR",
            "UNSIGNED_SHORT",
            "UNSIGNED",
            "UNSIGNED_LONG",
            "UNSIGNED_LONG_LONG",
            "INT8_T",
            "INT16_T",
            "INT32_T",
            "INT64_T",
            "UINT8_T",
            "UINT16_T",
            "UINT32_T",
            "UINT64_T",
        ),
        TypeClass.C_INTEGER,
    ),
    **dict.fromkeys(("AINT", "OFFSET", "COUNT"), TypeClass.MULTI_LANGUAGE),
    **dict.fromkeys(("FLOAT", "DOUBLE", "LONG_DOUBLE"), TypeClass.FLOATING_POINT),
    **dict.fromkeys(("C_BOOL", "CXX_BOOL"), TypeClass.LOGICAL),
    **dict.fromkeys(
        (
            "C_FLOAT_COMPLEX",
            "C_DOUBLE_COMPLEX",
            "C_LONG_DOUBLE_COMPLEX",
            "CXX_FLOAT_COMPLEX",
            "CXX_DOUBLE_COMPLEX",
            "CXX_LONG_DOUBLE_COMPLEX",
        ),
        TypeClass.COMPLEX,
    ),
    "BYTE": TypeClass.BYTE,
    **dict.fromkeys(
        ("SHORT_INT", "TWOINT", "LONG_INT", "FLOAT_INT", "DOUBLE_INT", "LONG_DOUBLE_INT"),
        TypeClass.PAIR,
    ),
    **dict.fromkeys(("CHAR", "WCHAR", "PACKED"), TypeClass.OTHER),
    # Fortran types and half precision: the classes of their C look-alikes.
    **dict.fromkeys(
        ("INTEGER", "INTEGER1", "INTEGER2", "INTEGER4", "INTEGER8"), TypeClass.C_INTEGER
    ),
    **dict.fromkeys(
        ("REAL", "DOUBLE_PRECISION", "REAL2", "REAL4", "REAL8", "FLOAT16_T"),
        TypeClass.FLOATING_POINT,
    ),
    **dict.fromkeys(("LOGICAL", "LOGICAL1", "LOGICAL2", "LOGICAL4", "LOGICAL8"), TypeClass.LOGICAL),
    **dict.fromkeys(("COMPLEX", "DOUBLE_COMPLEX", "COMPLEX8", "COMPLEX16"), TypeClass.COMPLEX),
    "CHARACTER": TypeClass.OTHER,
}

_C = TypeClass
_ARITHMETIC_ORDER = frozenset({_C.C_INTEGER, _C.MULTI_LANGUAGE, _C.FLOATING_POINT})
_BITWISE = frozenset({_C.C_INTEGER, _C.MULTI_LANGUAGE, _C.BYTE})
_LOGICAL = frozenset({_C.C_INTEGER, _C.LOGICAL})

#: The classes each reduction operation is defined on (REPLACE and NO_OP: see module docstring).
ALLOWED: Final[dict[Intrinsic, frozenset[TypeClass]]] = {
    Intrinsic.MAX: _ARITHMETIC_ORDER,
    Intrinsic.MIN: _ARITHMETIC_ORDER,
    Intrinsic.SUM: _ARITHMETIC_ORDER | {_C.COMPLEX},
    Intrinsic.PROD: _ARITHMETIC_ORDER | {_C.COMPLEX},
    Intrinsic.LAND: _LOGICAL,
    Intrinsic.LOR: _LOGICAL,
    Intrinsic.LXOR: _LOGICAL,
    Intrinsic.BAND: _BITWISE,
    Intrinsic.BOR: _BITWISE,
    Intrinsic.BXOR: _BITWISE,
    Intrinsic.MAXLOC: frozenset({_C.PAIR}),
    Intrinsic.MINLOC: frozenset({_C.PAIR}),
    Intrinsic.REPLACE: frozenset(),
    Intrinsic.NO_OP: frozenset(),
}

_ACCUMULATE_ONLY: Final = frozenset({Intrinsic.REPLACE, Intrinsic.NO_OP})

_FAMILY: Final[dict[Intrinsic, str]] = {
    Intrinsic.MAX: "MAX and MIN apply",
    Intrinsic.MIN: "MAX and MIN apply",
    Intrinsic.SUM: "SUM and PROD apply",
    Intrinsic.PROD: "SUM and PROD apply",
    Intrinsic.LAND: "LAND, LOR and LXOR apply",
    Intrinsic.LOR: "LAND, LOR and LXOR apply",
    Intrinsic.LXOR: "LAND, LOR and LXOR apply",
    Intrinsic.BAND: "BAND, BOR and BXOR apply",
    Intrinsic.BOR: "BAND, BOR and BXOR apply",
    Intrinsic.BXOR: "BAND, BOR and BXOR apply",
    Intrinsic.MAXLOC: "MAXLOC and MINLOC apply",
    Intrinsic.MINLOC: "MAXLOC and MINLOC apply",
}

_PAIR_NAMES = (
    "MPI.SHORT_INT, MPI.TWOINT, MPI.LONG_INT, MPI.FLOAT_INT, MPI.DOUBLE_INT, MPI.LONG_DOUBLE_INT"
)


def type_class(datatype: Datatype) -> TypeClass | None:
    """The class of a predefined datatype; ``None`` for a derived one (or a duplicate)."""
    layout = datatype.layout
    if not layout.key:  # named datatypes and Create_f90_* ones have a key
        return None
    return _CLASS_OF_KEY[layout.key]


def allowed(op: Intrinsic, datatype: Datatype, *, accumulate: bool = False) -> bool:
    """Whether MPI defines ``op`` on ``datatype`` (in a reduction, or in an accumulate)."""
    try:
        check(op, datatype, accumulate=accumulate)
    except MPIException:
        return False
    return True


def check(op: Intrinsic, datatype: Datatype, *, accumulate: bool = False) -> None:
    """Raise ``MPI.Exception(ERR_OP)`` saying why, unless MPI defines ``op`` on ``datatype``."""
    if not datatype:
        raise null_datatype_error(f"MPI.{op.name}")
    cls = type_class(datatype)
    name = datatype.Get_name()
    if cls is None:
        raise MPIException(
            ERR_OP,
            f"MPI.{op.name} on the derived datatype {name}: ompy applies predefined operations "
            "to predefined datatypes only so far; reduce the predefined datatype it is made of "
            "with a larger count instead",
        )
    if op in _ACCUMULATE_ONLY:
        if accumulate:
            return
        raise MPIException(
            ERR_OP,
            f"MPI.{op.name} is defined for one-sided accumulate operations only "
            "(Win.Accumulate, Win.Get_accumulate, Win.Fetch_and_op), not for reductions "
            f"such as Reduce_local on {name}",
        )
    classes = ALLOWED[op]
    if cls in classes:
        return
    if cls is TypeClass.PAIR:
        hint = "value/index pair types are reduced with MPI.MAXLOC and MPI.MINLOC only"
    elif op in (Intrinsic.MAXLOC, Intrinsic.MINLOC):
        hint = f"{_FAMILY[op]} to the value/index pair types ({_PAIR_NAMES})"
    else:
        names = [c.value for c in TypeClass if c in classes]
        kinds = ", ".join(names[:-1]) + " and " + names[-1]
        hint = f"{_FAMILY[op]} to {kinds} datatypes"
    raise MPIException(
        ERR_OP, f"MPI.{op.name} is not defined on {name} ({cls.value} datatype): {hint}"
    )
