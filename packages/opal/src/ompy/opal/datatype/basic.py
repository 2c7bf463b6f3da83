"""The predefined element kinds every datatype is built from, as this machine lays them out.

A :class:`Basic` is the opal view of one C (or Fortran) element type: its name, what kind of
value it holds (what a heterogeneous conversion or a reduction must know about it), its size in
bytes here and the native numpy dtype that reads it.  It knows nothing of MPI handles: the MPI
layer maps ``MPI.DOUBLE`` onto ``BASICS["double"]``, several MPI names may share one Basic
(``MPI.INT``, ``MPI.SIGNED_INT``), and Fortran kinds have their own entries because another
architecture may size them differently from their C look-alikes.

``"byte"`` is the untyped element (``MPI.BYTE``, ``MPI.PACKED``): it is never converted.
Types this machine's numpy cannot represent (128-bit integers and reals, ``COMPLEX4`` made of
half floats, bfloat16) are absent;
the MPI layer reports them as unavailable.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs
import numpy as np

#: The kinds of value an element can hold: what conversion and reduction code dispatch on.
KINDS: Final = frozenset({"signed", "unsigned", "float", "complex", "bool", "char", "byte"})


def _check_kind(instance: Basic, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in KINDS:
        raise ValueError(
            f"Basic {instance.name!r}: kind must be one of {sorted(KINDS)}, got {value!r}"
        )


def _check_size(instance: Basic, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"Basic {instance.name!r}: size must be >= 1 byte, got {value}")
    if value != instance.dtype.itemsize:
        raise ValueError(
            f"Basic {instance.name!r}: size {value} differs from its dtype's itemsize "
            f"{instance.dtype.itemsize}"
        )


def _as_dtype(value: Any) -> np.dtype[np.generic]:
    return np.dtype(value)


@attrs.frozen
class Basic:
    """One predefined element kind on this machine (architecture-neutral by name and kind)."""

    #: The C (or Fortran) type it stands for: ``"double"``, ``"unsigned long"``, ``"INTEGER4"``.
    name: str
    #: One of :data:`KINDS`.
    kind: str = attrs.field(validator=_check_kind)
    #: Bytes of one element on this machine (always ``dtype.itemsize``).
    size: int = attrs.field(validator=_check_size)
    #: The native numpy dtype reading one element in this machine's representation.
    dtype: np.dtype[np.generic] = attrs.field(converter=_as_dtype)

    def __repr__(self) -> str:
        return f"Basic({self.name!r}, {self.kind}, {self.size} bytes)"


def _wchar_dtype() -> np.dtype[np.generic]:
    """``wchar_t`` as numpy reads it: a UCS-4 character where it is 4 bytes, else uint16."""
    size = ctypes.sizeof(ctypes.c_wchar)
    return np.dtype("U1") if size == 4 else np.dtype(f"u{size}")


# (name, kind, dtype) for every basic; sizes follow from the dtypes, which numpy takes from the
# C compiler that built it, so they are this machine's C sizes.
_TABLE: tuple[tuple[str, str, np.dtype[np.generic]], ...] = (
    # Untyped and character data.
    ("byte", "byte", np.dtype(np.uint8)),
    ("char", "char", np.dtype("S1")),
    ("wchar_t", "char", _wchar_dtype()),
    # C integers.
    ("signed char", "signed", np.dtype(np.byte)),
    ("unsigned char", "unsigned", np.dtype(np.ubyte)),
    ("short", "signed", np.dtype(np.short)),
    ("unsigned short", "unsigned", np.dtype(np.ushort)),
    ("int", "signed", np.dtype(np.intc)),
    ("unsigned", "unsigned", np.dtype(np.uintc)),
    ("long", "signed", np.dtype(np.dtype("l"))),
    ("unsigned long", "unsigned", np.dtype(np.dtype("L"))),
    ("long long", "signed", np.dtype(np.longlong)),
    ("unsigned long long", "unsigned", np.dtype(np.ulonglong)),
    ("int8_t", "signed", np.dtype(np.int8)),
    ("int16_t", "signed", np.dtype(np.int16)),
    ("int32_t", "signed", np.dtype(np.int32)),
    ("int64_t", "signed", np.dtype(np.int64)),
    ("uint8_t", "unsigned", np.dtype(np.uint8)),
    ("uint16_t", "unsigned", np.dtype(np.uint16)),
    ("uint32_t", "unsigned", np.dtype(np.uint32)),
    ("uint64_t", "unsigned", np.dtype(np.uint64)),
    # Address-sized integers of the MPI standard (MPI_Aint, MPI_Offset, MPI_Count).
    ("aint", "signed", np.dtype(np.intp)),
    ("offset", "signed", np.dtype(np.int64)),
    ("count", "signed", np.dtype(np.int64)),
    # C floating point and complex.
    ("float16", "float", np.dtype(np.float16)),
    ("float", "float", np.dtype(np.single)),
    ("double", "float", np.dtype(np.double)),
    ("long double", "float", np.dtype(np.longdouble)),
    ("float _Complex", "complex", np.dtype(np.csingle)),
    ("double _Complex", "complex", np.dtype(np.cdouble)),
    ("long double _Complex", "complex", np.dtype(np.clongdouble)),
    ("bool", "bool", np.dtype(np.bool_)),
    # Fortran kinds (gfortran's layout: default INTEGER/REAL/LOGICAL are 4 bytes, LOGICAL is an
    # integer holding 0 or 1).
    ("CHARACTER", "char", np.dtype("S1")),
    ("LOGICAL", "bool", np.dtype(np.int32)),
    ("INTEGER", "signed", np.dtype(np.int32)),
    ("REAL", "float", np.dtype(np.float32)),
    ("DOUBLE PRECISION", "float", np.dtype(np.float64)),
    ("COMPLEX", "complex", np.dtype(np.complex64)),
    ("DOUBLE COMPLEX", "complex", np.dtype(np.complex128)),
    ("LOGICAL1", "bool", np.dtype(np.int8)),
    ("LOGICAL2", "bool", np.dtype(np.int16)),
    ("LOGICAL4", "bool", np.dtype(np.int32)),
    ("LOGICAL8", "bool", np.dtype(np.int64)),
    ("INTEGER1", "signed", np.dtype(np.int8)),
    ("INTEGER2", "signed", np.dtype(np.int16)),
    ("INTEGER4", "signed", np.dtype(np.int32)),
    ("INTEGER8", "signed", np.dtype(np.int64)),
    ("REAL2", "float", np.dtype(np.float16)),
    ("REAL4", "float", np.dtype(np.float32)),
    ("REAL8", "float", np.dtype(np.float64)),
    ("COMPLEX8", "complex", np.dtype(np.complex64)),
    ("COMPLEX16", "complex", np.dtype(np.complex128)),
)

#: Every basic element kind by name.
BASICS: Final[Mapping[str, Basic]] = MappingProxyType(
    {name: Basic(name, kind, dtype.itemsize, dtype) for name, kind, dtype in _TABLE}
)
