"""The predefined datatypes, and the codes that name them.

Each is a named :class:`~ompy.ompi.datatype.layout.Layout` over one opal
:class:`~ompy.opal.datatype.basic.Basic` (``MPI.DOUBLE`` over ``BASICS["double"]``), so sizes
are this machine's C (and gfortran) sizes: ``long`` is 8 bytes on Linux x86-64 and 4 on
Windows.  The value/index pairs used by ``MINLOC``/``MAXLOC`` are structs with C alignment:
``DOUBLE_INT`` has size 12 (bytes of data) and extent 16 (the stride of a C
``struct {double; int;}``).

Types this machine's numpy cannot hold (``LOGICAL16``, ``INTEGER16``, ``REAL16``,
``COMPLEX4``, ``COMPLEX32``, ``BFLOAT16_T``) are ``DATATYPE_NULL``, as mpi4py shows a type the
MPI library lacks.  The character codes and type strings (``typechar``, ``typestr``,
``tocode``, ``fromcode``) are mpi4py's for the same machine.
"""

from __future__ import annotations

import sys
from typing import Final

import numpy as np

from ompy.opal.datatype.basic import BASICS
from ompy.opal.datatype.description import Description

from ..handle import predefine
from .datatype import Datatype
from .envelope import COMBINER_NAMED, NAMED
from .layout import Layout
from .matching import pair_layout

#: Every predefined datatype by its attribute name in ``MPI`` (aliases included).
BY_KEY: Final[dict[str, Datatype]] = {}


def _basic(  # noqa: PLR0917 (one row of the table below)
    key: str, mpi_name: str, basic: str, typechar: str, code: str = "", typestr: str = ""
) -> Datatype:
    """A named datatype of one ``basic``; ``code`` defaults to the character code and
    ``typestr`` to the type string numpy gives that character code."""
    found = BASICS[basic]
    code = code or typechar
    layout = Layout(
        name=mpi_name,
        description=Description.of_basic(found),
        envelope=NAMED,
        dtype=found.dtype,
        code=code,
        typechar=typechar,
        typestr=typestr or _typestr(typechar),
        key=key,
        committed=True,
    )
    handle = Datatype._of(layout)
    BY_KEY[key] = handle
    return handle


def _typestr(typechar: str) -> str:
    """mpi4py's type string of a character code: numpy kind and size, no byte order."""
    if typechar == "c":
        return "S1"
    if typechar == "U":
        return "U1"
    dtype = np.dtype(typechar)
    return f"{dtype.kind}{dtype.itemsize}"


def _pair(key: str, mpi_name: str, value: Datatype) -> Datatype:
    """A ``{value; int}`` pair type as C lays it out (aligned, padded to its alignment)."""
    layout = pair_layout(mpi_name, value.layout.dtype, INT.layout.dtype, value.layout, INT.layout)
    layout.envelope = NAMED
    layout.key = key
    handle = Datatype._of(layout)
    BY_KEY[key] = handle
    return handle


def _alias(key: str, datatype: Datatype) -> Datatype:
    BY_KEY[key] = datatype
    return datatype


#: The null datatype: every operation on it is an ``ERR_TYPE`` error.
DATATYPE_NULL: Final = Datatype()
BY_KEY["DATATYPE_NULL"] = DATATYPE_NULL

_ADDRESS: Final = "p"  # mpi4py's code of MPI_Aint, MPI_Offset and MPI_Count (8 bytes here)

# -- untyped bytes ----------------------------------------------------------------------------
BYTE: Final = _basic("BYTE", "MPI_BYTE", "byte", "B")
PACKED: Final = _basic("PACKED", "MPI_PACKED", "byte", "B")

# -- C integer and character types -----------------------------------------------------------
CHAR: Final = _basic("CHAR", "MPI_CHAR", "char", "c")
WCHAR: Final = _basic("WCHAR", "MPI_WCHAR", "wchar_t", "U" if BASICS["wchar_t"].size == 4 else "H")
SIGNED_CHAR: Final = _basic("SIGNED_CHAR", "MPI_SIGNED_CHAR", "signed char", "b")
SHORT: Final = _basic("SHORT", "MPI_SHORT", "short", "h")
INT: Final = _basic("INT", "MPI_INT", "int", "i")
LONG: Final = _basic("LONG", "MPI_LONG", "long", "l")
LONG_LONG: Final = _basic("LONG_LONG", "MPI_LONG_LONG_INT", "long long", "q")
UNSIGNED_CHAR: Final = _basic("UNSIGNED_CHAR", "MPI_UNSIGNED_CHAR", "unsigned char", "B")
UNSIGNED_SHORT: Final = _basic("UNSIGNED_SHORT", "MPI_UNSIGNED_SHORT", "unsigned short", "H")
UNSIGNED: Final = _basic("UNSIGNED", "MPI_UNSIGNED", "unsigned", "I")
UNSIGNED_LONG: Final = _basic("UNSIGNED_LONG", "MPI_UNSIGNED_LONG", "unsigned long", "L")
UNSIGNED_LONG_LONG: Final = _basic(
    "UNSIGNED_LONG_LONG", "MPI_UNSIGNED_LONG_LONG", "unsigned long long", "Q"
)

# -- C floating point, boolean and complex types ------------------------------------------------
FLOAT: Final = _basic("FLOAT", "MPI_FLOAT", "float", "f")
DOUBLE: Final = _basic("DOUBLE", "MPI_DOUBLE", "double", "d")
LONG_DOUBLE: Final = _basic("LONG_DOUBLE", "MPI_LONG_DOUBLE", "long double", "g")
C_BOOL: Final = _basic("C_BOOL", "MPI_C_BOOL", "bool", "?", "b1")
C_FLOAT_COMPLEX: Final = _basic("C_FLOAT_COMPLEX", "MPI_C_FLOAT_COMPLEX", "float _Complex", "F")
C_DOUBLE_COMPLEX: Final = _basic("C_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX", "double _Complex", "D")
C_LONG_DOUBLE_COMPLEX: Final = _basic(
    "C_LONG_DOUBLE_COMPLEX", "MPI_C_LONG_DOUBLE_COMPLEX", "long double _Complex", "G"
)

# -- fixed-width integers (mpi4py's codes are type strings, its typechars the C types') -------
INT8_T: Final = _basic("INT8_T", "MPI_INT8_T", "int8_t", "b", "i1")
INT16_T: Final = _basic("INT16_T", "MPI_INT16_T", "int16_t", "h", "i2")
INT32_T: Final = _basic("INT32_T", "MPI_INT32_T", "int32_t", "i", "i4")
INT64_T: Final = _basic("INT64_T", "MPI_INT64_T", "int64_t", np.dtype(np.int64).char, "i8")
UINT8_T: Final = _basic("UINT8_T", "MPI_UINT8_T", "uint8_t", "B", "u1")
UINT16_T: Final = _basic("UINT16_T", "MPI_UINT16_T", "uint16_t", "H", "u2")
UINT32_T: Final = _basic("UINT32_T", "MPI_UINT32_T", "uint32_t", "I", "u4")
UINT64_T: Final = _basic("UINT64_T", "MPI_UINT64_T", "uint64_t", np.dtype(np.uint64).char, "u8")

# -- address-sized integers -----------------------------------------------------------------------
AINT: Final = _basic("AINT", "MPI_AINT", "aint", _ADDRESS, typestr="i8")
OFFSET: Final = _basic("OFFSET", "MPI_OFFSET", "offset", _ADDRESS, typestr="i8")
COUNT: Final = _basic("COUNT", "MPI_COUNT", "count", _ADDRESS, typestr="i8")

# -- C++ types ----------------------------------------------------------------------------------
CXX_BOOL: Final = _basic("CXX_BOOL", "MPI_CXX_BOOL", "bool", "?", typestr="b1")
CXX_FLOAT_COMPLEX: Final = _basic(
    "CXX_FLOAT_COMPLEX", "MPI_CXX_FLOAT_COMPLEX", "float _Complex", "F"
)
CXX_DOUBLE_COMPLEX: Final = _basic(
    "CXX_DOUBLE_COMPLEX", "MPI_CXX_DOUBLE_COMPLEX", "double _Complex", "D"
)
CXX_LONG_DOUBLE_COMPLEX: Final = _basic(
    "CXX_LONG_DOUBLE_COMPLEX", "MPI_CXX_LONG_DOUBLE_COMPLEX", "long double _Complex", "G"
)

# -- value/index pairs for MINLOC and MAXLOC -------------------------------------------------------
SHORT_INT: Final = _pair("SHORT_INT", "MPI_SHORT_INT", SHORT)
TWOINT: Final = _pair("TWOINT", "MPI_2INT", INT)
LONG_INT: Final = _pair("LONG_INT", "MPI_LONG_INT", LONG)
FLOAT_INT: Final = _pair("FLOAT_INT", "MPI_FLOAT_INT", FLOAT)
DOUBLE_INT: Final = _pair("DOUBLE_INT", "MPI_DOUBLE_INT", DOUBLE)
LONG_DOUBLE_INT: Final = _pair("LONG_DOUBLE_INT", "MPI_LONG_DOUBLE_INT", LONG_DOUBLE)

# -- C half precision (MPICH's name; Open MPI has none) -------------------------------------------
FLOAT16_T: Final = _basic("FLOAT16_T", "MPIX_C_FLOAT16", "float16", "e")

# -- Fortran types (gfortran's sizes: default INTEGER, REAL and LOGICAL are 4 bytes) -------------
CHARACTER: Final = _basic("CHARACTER", "MPI_CHARACTER", "CHARACTER", "c")
LOGICAL: Final = _basic("LOGICAL", "MPI_LOGICAL", "LOGICAL", "i")
INTEGER: Final = _basic("INTEGER", "MPI_INTEGER", "INTEGER", "i")
REAL: Final = _basic("REAL", "MPI_REAL", "REAL", "f")
DOUBLE_PRECISION: Final = _basic(
    "DOUBLE_PRECISION", "MPI_DOUBLE_PRECISION", "DOUBLE PRECISION", "d"
)
COMPLEX: Final = _basic("COMPLEX", "MPI_COMPLEX", "COMPLEX", "F")
DOUBLE_COMPLEX: Final = _basic("DOUBLE_COMPLEX", "MPI_DOUBLE_COMPLEX", "DOUBLE COMPLEX", "D")
LOGICAL1: Final = _basic("LOGICAL1", "MPI_LOGICAL1", "LOGICAL1", "?", "b1")
LOGICAL2: Final = _basic("LOGICAL2", "MPI_LOGICAL2", "LOGICAL2", "h", "i2")
LOGICAL4: Final = _basic("LOGICAL4", "MPI_LOGICAL4", "LOGICAL4", "i", "i4")
LOGICAL8: Final = _basic("LOGICAL8", "MPI_LOGICAL8", "LOGICAL8", np.dtype(np.int64).char, "i8")
INTEGER1: Final = _basic("INTEGER1", "MPI_INTEGER1", "INTEGER1", "b", "i1")
INTEGER2: Final = _basic("INTEGER2", "MPI_INTEGER2", "INTEGER2", "h", "i2")
INTEGER4: Final = _basic("INTEGER4", "MPI_INTEGER4", "INTEGER4", "i", "i4")
INTEGER8: Final = _basic("INTEGER8", "MPI_INTEGER8", "INTEGER8", np.dtype(np.int64).char, "i8")
REAL2: Final = _basic("REAL2", "MPI_REAL2", "REAL2", "e", "f2")
REAL4: Final = _basic("REAL4", "MPI_REAL4", "REAL4", "f", "f4")
REAL8: Final = _basic("REAL8", "MPI_REAL8", "REAL8", "d", "f8")
COMPLEX8: Final = _basic("COMPLEX8", "MPI_COMPLEX8", "COMPLEX8", "F", "c8")
COMPLEX16: Final = _basic("COMPLEX16", "MPI_COMPLEX16", "COMPLEX16", "D", "c16")

# -- types numpy cannot hold here: null, as an MPI library without them shows them -------------
LOGICAL16: Final = _alias("LOGICAL16", DATATYPE_NULL)
INTEGER16: Final = _alias("INTEGER16", DATATYPE_NULL)
REAL16: Final = _alias("REAL16", DATATYPE_NULL)
COMPLEX4: Final = _alias("COMPLEX4", DATATYPE_NULL)
COMPLEX32: Final = _alias("COMPLEX32", DATATYPE_NULL)
BFLOAT16_T: Final = _alias("BFLOAT16_T", DATATYPE_NULL)

# -- mpi4py's aliases: other names for the same datatypes -----------------------------------------
SIGNED_SHORT: Final = _alias("SIGNED_SHORT", SHORT)
SIGNED_INT: Final = _alias("SIGNED_INT", INT)
SIGNED_LONG: Final = _alias("SIGNED_LONG", LONG)
SIGNED_LONG_LONG: Final = _alias("SIGNED_LONG_LONG", LONG_LONG)
LONG_LONG_INT: Final = _alias("LONG_LONG_INT", LONG_LONG)
UNSIGNED_INT: Final = _alias("UNSIGNED_INT", UNSIGNED)
C_COMPLEX: Final = _alias("C_COMPLEX", C_FLOAT_COMPLEX)
BOOL: Final = _alias("BOOL", C_BOOL)
INT_INT: Final = _alias("INT_INT", TWOINT)
FLOAT32_T: Final = _alias("FLOAT32_T", FLOAT)
FLOAT64_T: Final = _alias("FLOAT64_T", DOUBLE)
SINT8_T: Final = _alias("SINT8_T", INT8_T)
SINT16_T: Final = _alias("SINT16_T", INT16_T)
SINT32_T: Final = _alias("SINT32_T", INT32_T)
SINT64_T: Final = _alias("SINT64_T", INT64_T)
F_BOOL: Final = _alias("F_BOOL", LOGICAL)
F_INT: Final = _alias("F_INT", INTEGER)
F_FLOAT: Final = _alias("F_FLOAT", REAL)
F_DOUBLE: Final = _alias("F_DOUBLE", DOUBLE_PRECISION)
F_COMPLEX: Final = _alias("F_COMPLEX", COMPLEX)
F_FLOAT_COMPLEX: Final = _alias("F_FLOAT_COMPLEX", COMPLEX)
F_DOUBLE_COMPLEX: Final = _alias("F_DOUBLE_COMPLEX", DOUBLE_COMPLEX)

#: The named value/index pairs by (value key, index key), for ``Get_value_index``.
PAIRS: Final[dict[tuple[str, str], Datatype]] = {
    (value, "INT"): pair
    for value, pair in (
        ("SHORT", SHORT_INT),
        ("INT", TWOINT),
        ("LONG", LONG_INT),
        ("FLOAT", FLOAT_INT),
        ("DOUBLE", DOUBLE_INT),
        ("LONG_DOUBLE", LONG_DOUBLE_INT),
    )
}


def _register_handles() -> None:
    """Number the predefined datatypes (``DATATYPE_NULL`` is 0) and let them pickle by name."""
    number = 0
    for key, datatype in BY_KEY.items():
        if not datatype._constant():  # an alias: the first name is the datatype's
            predefine(datatype, key, number)
            number += 1


_register_handles()

# -- codes ---------------------------------------------------------------------------------------

#: Character codes (numpy's ``dtype.char``, the struct module's formats) to datatypes: what a
#: buffer's item format says it holds.
TYPECHARS: Final[dict[str, Datatype]] = {
    "?": C_BOOL,
    "c": CHAR,
    "S": CHAR,
    "U": WCHAR,
    "w": WCHAR,
    "u": WCHAR,
    "b": SIGNED_CHAR,
    "h": SHORT,
    "i": INT,
    "l": LONG,
    "q": LONG_LONG,
    "B": UNSIGNED_CHAR,
    "H": UNSIGNED_SHORT,
    "I": UNSIGNED,
    "L": UNSIGNED_LONG,
    "Q": UNSIGNED_LONG_LONG,
    "e": FLOAT16_T,
    "f": FLOAT,
    "d": DOUBLE,
    "g": LONG_DOUBLE,
    "F": C_FLOAT_COMPLEX,
    "D": C_DOUBLE_COMPLEX,
    "G": C_LONG_DOUBLE_COMPLEX,
}


def _typestrs() -> dict[str, Datatype]:
    """numpy kind + byte size (``"i4"``, ``"f8"``, ``"c16"``) to datatypes of this machine."""
    table = {
        "b1": C_BOOL,
        "i1": INT8_T,
        "i2": INT16_T,
        "i4": INT32_T,
        "i8": INT64_T,
        "u1": UINT8_T,
        "u2": UINT16_T,
        "u4": UINT32_T,
        "u8": UINT64_T,
        "f2": FLOAT16_T,
    }
    for datatype in (FLOAT, DOUBLE, LONG_DOUBLE):
        table.setdefault(f"f{datatype.size}", datatype)
    for datatype in (C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX, C_LONG_DOUBLE_COMPLEX):
        table.setdefault(f"c{datatype.size}", datatype)
    return table


TYPESTRS: Final[dict[str, Datatype]] = _typestrs()


#: The unsigned C integer as wide as a pointer (``size_t``, ``uintptr_t``).
_UINTP: Final = UNSIGNED_LONG if UNSIGNED_LONG.size == np.dtype(np.uintp).itemsize else UNSIGNED


def _type_codes() -> dict[str, Datatype]:
    """Every code ``Datatype.fromcode`` accepts, as mpi4py maps them on this machine."""
    codes: dict[str, Datatype] = {**TYPECHARS, **TYPESTRS}
    codes.update(
        {
            "e": FLOAT16_T,
            "a": CHAR,
            "S1": CHAR,
            "s": CHAR,
            "1s": CHAR,
            "U1": WCHAR,
            "u": UINT16_T,
            "1u": UINT16_T,
            "w": WCHAR,
            "1w": WCHAR,
            "Zf": C_FLOAT_COMPLEX,
            "Zd": C_DOUBLE_COMPLEX,
            "Zg": C_LONG_DOUBLE_COMPLEX,
            "n": COUNT,
            "N": _UINTP,
            "p": AINT,
            "P": _UINTP,
            "M": INT64_T,
            "M8": INT64_T,
            "m": INT64_T,
            "m8": INT64_T,
        }
    )
    return codes


#: What ``Datatype.fromcode`` accepts.
TYPE_CODES: Final[dict[str, Datatype]] = _type_codes()

_NATIVE: Final = "<" if sys.byteorder == "little" else ">"


def from_code(code: str) -> Datatype:
    """The predefined datatype of a character code (``"d"``) or type string (``"f8"``).

    A byte-order prefix is accepted when it is this machine's (``"<f8"`` here).
    """
    if not isinstance(code, str):
        raise TypeError(f"a datatype code must be a str such as 'd' or 'f8', not {code!r}")
    stripped = code[1:] if code[:1] in ("=", "@", "|", _NATIVE) and len(code) > 1 else code
    datatype = TYPE_CODES.get(stripped)
    if datatype is None:
        raise ValueError(
            f"cannot map code {code!r} to MPI datatype; use a character code such as 'd' or 'i' "
            "or a type string such as 'f8' or 'i4' (in this machine's byte order)"
        )
    return datatype


def by_key(key: str) -> Datatype:
    """The predefined datatype named ``key`` in ``MPI`` (what pickled datatypes refer to)."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise ValueError(f"no predefined MPI datatype is called {key!r}") from None


def typecode(datatype: Datatype) -> str | None:
    """The character code or type string of a predefined datatype; None for any other
    (mpi4py's private ``MPI._typecode``, which its ``util.dtlib`` and tests use)."""
    if not isinstance(datatype, Datatype):
        raise TypeError(f"expecting a Datatype, not {type(datatype).__name__}")
    layout = datatype._layout
    if layout is None or layout.envelope.combiner != COMBINER_NAMED:
        return None
    return layout.code or None


def typealign(datatype: Datatype) -> int | None:
    """The alignment of a predefined datatype's C type (of the C struct for the value/index
    pairs); None for any other (mpi4py's private ``MPI._typealign``)."""
    if not isinstance(datatype, Datatype):
        raise TypeError(f"expecting a Datatype, not {type(datatype).__name__}")
    layout = datatype._layout
    if layout is None or layout.envelope.combiner != COMBINER_NAMED or layout.size == 0:
        return None
    return int(layout.dtype.alignment)
