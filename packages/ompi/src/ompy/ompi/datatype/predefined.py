"""The predefined datatypes, and the codes that name them.

Sizes come from numpy's view of the C types on this machine (``long`` is 8 bytes on Linux x86-64
and 4 on Windows), so they agree with the C compiler and with Open MPI.  The pair types used by
``MINLOC``/``MAXLOC`` are numpy structured dtypes with C alignment: ``DOUBLE_INT`` has size 12
(bytes of data) and extent 16 (the stride of a C ``struct {double; int;}``).
"""

from __future__ import annotations

from typing import Final

import numpy as np

from ..handle import predefine
from .datatype import Datatype, Layout

#: Every predefined datatype by its attribute name in ``MPI`` (aliases included).
BY_KEY: Final[dict[str, Datatype]] = {}


def _basic(key: str, mpi_name: str, dtype: str, typechar: str = "") -> Datatype:
    numpy_dtype = np.dtype(dtype)
    layout = Layout(
        name=mpi_name,
        dtype=numpy_dtype,
        size=numpy_dtype.itemsize,
        basic_sizes=(numpy_dtype.itemsize,),
        typechar=typechar,
        predefined=True,
        key=key,
    )
    handle = Datatype._of(layout)
    BY_KEY[key] = handle
    return handle


def _pair(key: str, mpi_name: str, value: str) -> Datatype:
    """A ``{value; int}`` pair type as C lays it out (aligned, padded to its alignment)."""
    numpy_dtype = np.dtype([("value", value), ("index", "i")], align=True)
    value_size, index_size = np.dtype(value).itemsize, np.dtype("i").itemsize
    layout = Layout(
        name=mpi_name,
        dtype=numpy_dtype,
        size=value_size + index_size,
        basic_sizes=(value_size, index_size),
        typechar="",
        predefined=True,
        key=key,
    )
    handle = Datatype._of(layout)
    BY_KEY[key] = handle
    return handle


def _alias(key: str, datatype: Datatype) -> Datatype:
    BY_KEY[key] = datatype
    return datatype


#: The null datatype: every operation on it is an ``ERR_TYPE`` error.
DATATYPE_NULL: Final = Datatype()
BY_KEY["DATATYPE_NULL"] = DATATYPE_NULL

# -- untyped bytes ----------------------------------------------------------------------------
BYTE: Final = _basic("BYTE", "MPI_BYTE", "B", "B")
PACKED: Final = _basic("PACKED", "MPI_PACKED", "B", "B")

# -- C integer and character types -----------------------------------------------------------
CHAR: Final = _basic("CHAR", "MPI_CHAR", "S1", "c")
WCHAR: Final = _basic("WCHAR", "MPI_WCHAR", "U1", "U")
SIGNED_CHAR: Final = _basic("SIGNED_CHAR", "MPI_SIGNED_CHAR", "b", "b")
SHORT: Final = _basic("SHORT", "MPI_SHORT", "h", "h")
INT: Final = _basic("INT", "MPI_INT", "i", "i")
LONG: Final = _basic("LONG", "MPI_LONG", "l", "l")
LONG_LONG: Final = _basic("LONG_LONG", "MPI_LONG_LONG_INT", "q", "q")
UNSIGNED_CHAR: Final = _basic("UNSIGNED_CHAR", "MPI_UNSIGNED_CHAR", "B", "B")
UNSIGNED_SHORT: Final = _basic("UNSIGNED_SHORT", "MPI_UNSIGNED_SHORT", "H", "H")
UNSIGNED: Final = _basic("UNSIGNED", "MPI_UNSIGNED", "I", "I")
UNSIGNED_LONG: Final = _basic("UNSIGNED_LONG", "MPI_UNSIGNED_LONG", "L", "L")
UNSIGNED_LONG_LONG: Final = _basic("UNSIGNED_LONG_LONG", "MPI_UNSIGNED_LONG_LONG", "Q", "Q")

# -- C floating point, boolean and complex types ------------------------------------------------
FLOAT: Final = _basic("FLOAT", "MPI_FLOAT", "f", "f")
DOUBLE: Final = _basic("DOUBLE", "MPI_DOUBLE", "d", "d")
LONG_DOUBLE: Final = _basic("LONG_DOUBLE", "MPI_LONG_DOUBLE", "g", "g")
C_BOOL: Final = _basic("C_BOOL", "MPI_C_BOOL", "?", "?")
C_FLOAT_COMPLEX: Final = _basic("C_FLOAT_COMPLEX", "MPI_C_FLOAT_COMPLEX", "F", "F")
C_DOUBLE_COMPLEX: Final = _basic("C_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX", "D", "D")
C_LONG_DOUBLE_COMPLEX: Final = _basic(
    "C_LONG_DOUBLE_COMPLEX", "MPI_C_LONG_DOUBLE_COMPLEX", "G", "G"
)

# -- fixed-width integers -------------------------------------------------------------------------
INT8_T: Final = _basic("INT8_T", "MPI_INT8_T", "i1")
INT16_T: Final = _basic("INT16_T", "MPI_INT16_T", "i2")
INT32_T: Final = _basic("INT32_T", "MPI_INT32_T", "i4")
INT64_T: Final = _basic("INT64_T", "MPI_INT64_T", "i8")
UINT8_T: Final = _basic("UINT8_T", "MPI_UINT8_T", "u1")
UINT16_T: Final = _basic("UINT16_T", "MPI_UINT16_T", "u2")
UINT32_T: Final = _basic("UINT32_T", "MPI_UINT32_T", "u4")
UINT64_T: Final = _basic("UINT64_T", "MPI_UINT64_T", "u8")

# -- address-sized integers -----------------------------------------------------------------------
AINT: Final = _basic("AINT", "MPI_AINT", "i8")
OFFSET: Final = _basic("OFFSET", "MPI_OFFSET", "i8")
COUNT: Final = _basic("COUNT", "MPI_COUNT", "i8")

# -- C++ types (mpi4py's BOOL is MPI_CXX_BOOL) --------------------------------------------------
CXX_BOOL: Final = _basic("CXX_BOOL", "MPI_CXX_BOOL", "?")
CXX_FLOAT_COMPLEX: Final = _basic("CXX_FLOAT_COMPLEX", "MPI_CXX_FLOAT_COMPLEX", "F")
CXX_DOUBLE_COMPLEX: Final = _basic("CXX_DOUBLE_COMPLEX", "MPI_CXX_DOUBLE_COMPLEX", "D")
CXX_LONG_DOUBLE_COMPLEX: Final = _basic(
    "CXX_LONG_DOUBLE_COMPLEX", "MPI_CXX_LONG_DOUBLE_COMPLEX", "G"
)

# -- value/index pairs for MINLOC and MAXLOC -------------------------------------------------------
SHORT_INT: Final = _pair("SHORT_INT", "MPI_SHORT_INT", "h")
TWOINT: Final = _pair("TWOINT", "MPI_2INT", "i")
LONG_INT: Final = _pair("LONG_INT", "MPI_LONG_INT", "l")
FLOAT_INT: Final = _pair("FLOAT_INT", "MPI_FLOAT_INT", "f")
DOUBLE_INT: Final = _pair("DOUBLE_INT", "MPI_DOUBLE_INT", "d")
LONG_DOUBLE_INT: Final = _pair("LONG_DOUBLE_INT", "MPI_LONG_DOUBLE_INT", "g")

# -- mpi4py's aliases: other names for the same datatypes -----------------------------------------
SIGNED_SHORT: Final = _alias("SIGNED_SHORT", SHORT)
SIGNED_INT: Final = _alias("SIGNED_INT", INT)
SIGNED_LONG: Final = _alias("SIGNED_LONG", LONG)
SIGNED_LONG_LONG: Final = _alias("SIGNED_LONG_LONG", LONG_LONG)
LONG_LONG_INT: Final = _alias("LONG_LONG_INT", LONG_LONG)
UNSIGNED_INT: Final = _alias("UNSIGNED_INT", UNSIGNED)
C_COMPLEX: Final = _alias("C_COMPLEX", C_FLOAT_COMPLEX)
BOOL: Final = _alias("BOOL", CXX_BOOL)
INT_INT: Final = _alias("INT_INT", TWOINT)


def _register_handles() -> None:
    """Number the predefined datatypes (``DATATYPE_NULL`` is 0) and let them pickle by name."""
    number = 0
    for key, datatype in BY_KEY.items():
        if not datatype._constant():  # an alias: the first name is the datatype's
            predefine(datatype, key, number)
            number += 1


_register_handles()

# -- codes ---------------------------------------------------------------------------------------

#: Character codes (numpy's ``dtype.char``, the struct module's formats) to datatypes.
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
    }
    for datatype in (FLOAT, DOUBLE, LONG_DOUBLE):
        table.setdefault(f"f{datatype.size}", datatype)
    for datatype in (C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX, C_LONG_DOUBLE_COMPLEX):
        table.setdefault(f"c{datatype.size}", datatype)
    return table


TYPESTRS: Final[dict[str, Datatype]] = _typestrs()


def from_code(code: str) -> Datatype:
    """The predefined datatype of a character code (``"d"``) or type string (``"f8"``)."""
    if not isinstance(code, str):
        raise TypeError(f"a datatype code must be a str such as 'd' or 'f8', not {code!r}")
    stripped = code[1:] if code[:1] in "<>=|!@" else code
    datatype = TYPECHARS.get(stripped) or TYPESTRS.get(stripped)
    if datatype is None:
        raise ValueError(
            f"cannot map code {code!r} to MPI datatype; use a character code such as 'd' or 'i' "
            "or a type string such as 'f8' or 'i4'"
        )
    return datatype


def by_key(key: str) -> Datatype:
    """The predefined datatype named ``key`` in ``MPI`` (what pickled datatypes refer to)."""
    try:
        return BY_KEY[key]
    except KeyError:
        raise ValueError(f"no predefined MPI datatype is called {key!r}") from None
