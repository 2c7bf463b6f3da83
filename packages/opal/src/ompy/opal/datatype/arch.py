"""Architectures: how one process represents the C types behind the predefined datatypes.

Two processes can exchange typed data byte for byte only when they agree on three things: the
byte order, the size of every C type (``long`` is 8 bytes on Linux x86-64, 4 on Windows and in
MPI's *external32*), and the format of ``long double`` (x87 80-bit extended padded to 16 bytes,
IEEE binary128, or plain binary64).  An :class:`Arch` records exactly those facts, nothing
about MPI: it is what Open MPI's ``proc_arch`` bit mask is, as a value.

- :meth:`Arch.local` measures this process (``sys.byteorder``, the sizes of its basics in
  :data:`~ompy.opal.datatype.basic.BASICS`, numpy's ``finfo`` of ``longdouble``);
- :data:`EXTERNAL32` is MPI's portable representation (MPI 4.1, section 14.5.2: big-endian,
  the fixed sizes of its table: ``long`` 4, ``long double`` 16 as binary128, ``wchar_t`` 2,
  ``_Bool`` 1, ``MPI_AINT``/``MPI_OFFSET``/``MPI_COUNT`` 8, Fortran ``INTEGER``/``REAL``/
  ``LOGICAL`` 4 and ``DOUBLE PRECISION`` 8);
- :meth:`Arch.with_byteorder` builds the simulated foreign architecture a rank presents with
  ``opal_arch_byteorder`` (the local one in the other byte order);
- :meth:`Arch.encode` / :meth:`Arch.decode` are the compact record every process publishes in
  the modex under :data:`MODEX_KEY` (a few bytes, the same on every machine);
- :class:`PeerArchs` is a process's view of the job: every peer's architecture, read from the
  modex on first use.

An element type is known by its ``name`` (the C type, as :class:`ompy.opal.datatype.basic.Basic`
spells it).  Types whose size is fixed by their name (``int32_t``, ``float16``, ``char``, Fortran
``INTEGER*4`` kinds, untyped ``byte``) have that size everywhere; the others are listed in
:data:`VARIABLE_TYPES` with the :class:`Arch` field holding their size.  A name in neither is an
error, so a new predefined type cannot silently travel with the wrong size.
"""

from __future__ import annotations

import enum
import functools
import re
import sys
import threading
from typing import Any, Final, Protocol

import attrs
import numpy as np

from ..mca.params import ParamType, ParamValueError, Registry
from .basic import BASICS

#: The modex key under which every process publishes :meth:`Arch.encode`.
MODEX_KEY: Final = "opal.arch"

#: The MCA parameter that makes a process present a foreign byte order.
BYTEORDER_PARAM: Final = "opal_arch_byteorder"
#: The ranks it applies to (empty: every rank), so one ``ompy run --mca`` makes a mixed job.
BYTEORDER_RANKS_PARAM: Final = "opal_arch_byteorder_ranks"

BYTEORDERS: Final = ("little", "big")


class LongDouble(enum.Enum):
    """The format of C ``long double`` (its size is :attr:`Arch.c_longdouble`)."""

    #: Intel x87 80-bit extended (64-bit significand with an explicit integer bit, 15-bit
    #: exponent), stored in 12 or 16 bytes with padding after it.
    X87 = "x87"
    #: IEEE 754 binary128 (quadruple): 112-bit fraction, 15-bit exponent; external32's format.
    BINARY128 = "binary128"
    #: IEEE 754 binary64: ``long double`` is ``double`` (Windows, Apple arm64).
    BINARY64 = "binary64"
    #: IBM double-double (a pair of binary64 values; PowerPC's traditional ``long double``).
    DOUBLE_DOUBLE = "double-double"


class Element(Protocol):
    """What an architecture needs to know of an element type (a ``Basic`` has these)."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def size(self) -> int: ...


def _size(_instance: object, attribute: attrs.Attribute[Any], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 255:
        raise ValueError(f"Arch.{attribute.name} must be a size in bytes (1..255), got {value!r}")


def _byteorder(_instance: object, _attribute: attrs.Attribute[Any], value: str) -> None:
    if value not in BYTEORDERS:
        raise ValueError(f"Arch.byteorder must be 'little' or 'big', got {value!r}")


def _field() -> Any:
    return attrs.field(validator=_size)


@attrs.frozen
class Arch:
    """The representation of every predefined element type in one process.

    Two processes with equal ``Arch`` values exchange typed data without conversion
    (:meth:`matches`); otherwise :func:`ompy.opal.datatype.convert.convert` turns a packed stream
    of one into the other.  Sizes are in bytes; a complex type is two of its real type.
    """

    byteorder: str = attrs.field(validator=_byteorder)
    long_double: LongDouble = attrs.field(validator=attrs.validators.instance_of(LongDouble))
    c_short: int = _field()
    c_int: int = _field()
    c_long: int = _field()
    c_longlong: int = _field()
    c_float: int = _field()
    c_double: int = _field()
    c_longdouble: int = _field()
    c_bool: int = _field()
    c_wchar: int = _field()
    #: ``MPI_Aint`` (an address: ``intptr_t``), ``MPI_Offset``, ``MPI_Count``.
    aint: int = _field()
    offset: int = _field()
    count: int = _field()
    #: Fortran's default kinds (no Fortran compiler here: gfortran's defaults, as ompy maps them).
    f_integer: int = _field()
    f_real: int = _field()
    f_double_precision: int = _field()
    f_logical: int = _field()

    @staticmethod
    def local() -> Arch:
        """This process's architecture, measured once."""
        return _local()

    def with_byteorder(self, byteorder: str) -> Arch:
        """This architecture in ``byteorder`` (``"little"``/``"big"``): every element's bytes
        reversed, sizes and formats unchanged (the simulated foreign peer)."""
        return attrs.evolve(self, byteorder=byteorder)

    @property
    def big_endian(self) -> bool:
        return self.byteorder == "big"

    @property
    def order_char(self) -> str:
        """numpy's byte-order character for this architecture (``"<"`` or ``">"``)."""
        return ">" if self.byteorder == "big" else "<"

    def matches(self, other: Arch) -> bool:
        """Whether typed data of ``other`` can be used here byte for byte (no conversion)."""
        return self == other

    # -- element types ------------------------------------------------------------------------

    def size_of(self, element: Element) -> int:
        """The size in bytes of one ``element`` in this architecture (``ValueError`` if the
        element's name is neither fixed-size nor in :data:`VARIABLE_TYPES`)."""
        variable = VARIABLE_TYPES.get(element.name)
        if variable is not None:
            field, parts = variable
            return int(getattr(self, field)) * parts
        if is_fixed(element.name):
            return element.size
        raise ValueError(
            f"the architecture does not know the element type {element.name!r}: add it to "
            f"VARIABLE_TYPES (if its size depends on the machine) or to the fixed-size names"
        )

    def parts_of(self, element: Element) -> int:
        """How many scalar components one element has (2 for complex types, else 1)."""
        return 2 if element.kind == "complex" else 1

    def is_long_double(self, element: Element) -> bool:
        """Whether ``element``'s components are C ``long double`` (formats may differ)."""
        variable = VARIABLE_TYPES.get(element.name)
        return variable is not None and variable[0] == "c_longdouble"

    # -- the modex record ---------------------------------------------------------------------

    def encode(self) -> bytes:
        """The compact record published in the modex: a version byte, the byte order, the
        ``long double`` format, then one byte per size in :data:`SIZE_FIELDS` order."""
        return bytes(
            (
                _RECORD_VERSION,
                BYTEORDERS.index(self.byteorder),
                _FORMATS.index(self.long_double),
                *(getattr(self, name) for name in SIZE_FIELDS),
            )
        )

    @classmethod
    def decode(cls, record: bytes) -> Arch:
        """The :class:`Arch` of an :meth:`encode` record (``ValueError`` if it is not one)."""
        record = bytes(record)
        expected = 3 + len(SIZE_FIELDS)
        if len(record) != expected or record[0] != _RECORD_VERSION:
            raise ValueError(
                f"not an architecture record of version {_RECORD_VERSION} ({expected} bytes): "
                f"{record.hex()!r}"
            )
        if record[1] >= len(BYTEORDERS) or record[2] >= len(_FORMATS):
            raise ValueError(f"architecture record with an unknown code: {record.hex()!r}")
        return cls(
            byteorder=BYTEORDERS[record[1]],
            long_double=_FORMATS[record[2]],
            **dict(zip(SIZE_FIELDS, record[3:], strict=True)),
        )

    def describe(self) -> list[tuple[str, str]]:
        """``(fact, value)`` pairs for people (``ompy info``)."""
        facts = [
            ("byte order", f"{self.byteorder}-endian"),
            ("long double format", f"{self.long_double.value} in {self.c_longdouble} bytes"),
        ]
        facts.extend((_C_NAMES[name], str(getattr(self, name))) for name in SIZE_FIELDS)
        return facts


#: The size fields of :class:`Arch`, in record order.
SIZE_FIELDS: Final = tuple(a.name for a in attrs.fields(Arch))[2:]
_RECORD_VERSION: Final = 1
_FORMATS: Final = tuple(LongDouble)

_C_NAMES: Final = {
    "c_short": "short",
    "c_int": "int",
    "c_long": "long",
    "c_longlong": "long long",
    "c_float": "float",
    "c_double": "double",
    "c_longdouble": "long double",
    "c_bool": "_Bool",
    "c_wchar": "wchar_t",
    "f_integer": "Fortran INTEGER",
    "f_real": "Fortran REAL",
    "f_double_precision": "Fortran DOUBLE PRECISION",
    "f_logical": "Fortran LOGICAL",
    "aint": "MPI_Aint",
    "offset": "MPI_Offset",
    "count": "MPI_Count",
}


def _variable_types() -> dict[str, tuple[str, int]]:
    table: dict[str, tuple[str, int]] = {}

    def add(field: str, parts: int, *names: str) -> None:
        for name in names:
            table[name] = (field, parts)

    add("c_short", 1, "short", "signed short", "short int", "unsigned short")
    add("c_short", 1, "unsigned short int")
    add("c_int", 1, "int", "signed int", "signed", "unsigned", "unsigned int")
    add("c_long", 1, "long", "signed long", "long int", "unsigned long", "unsigned long int")
    add("c_longlong", 1, "long long", "signed long long", "long long int", "unsigned long long")
    add("c_longlong", 1, "unsigned long long int")
    add("c_float", 1, "float")
    add("c_double", 1, "double")
    add("c_longdouble", 1, "long double")
    add("c_bool", 1, "bool", "_Bool", "c bool", "cxx bool")
    add("c_wchar", 1, "wchar_t", "wchar")
    add("aint", 1, "aint", "MPI_Aint")
    add("offset", 1, "offset", "MPI_Offset")
    add("count", 1, "count", "MPI_Count")
    add("c_float", 2, "float _Complex", "float complex", "cxx float complex")
    add("c_double", 2, "double _Complex", "double complex", "cxx double complex")
    add("c_longdouble", 2, "long double _Complex", "long double complex")
    add("c_longdouble", 2, "cxx long double complex")
    add("f_integer", 1, "integer", "INTEGER")
    add("f_real", 1, "real", "REAL")
    add("f_double_precision", 1, "double precision", "DOUBLE PRECISION")
    add("f_logical", 1, "logical", "LOGICAL")
    add("f_real", 2, "complex", "COMPLEX")
    add("f_double_precision", 2, "DOUBLE COMPLEX")
    return table


#: Element-type names whose size depends on the architecture: name -> (Arch field, components).
VARIABLE_TYPES: Final[dict[str, tuple[str, int]]] = _variable_types()

_FIXED_NAMES: Final = frozenset(
    {"byte", "packed", "char", "signed char", "unsigned char", "character", "CHARACTER"}
)
#: Names whose size is in the name: int8_t, uint64_t, float16, bfloat16, float32_t,
#: Fortran integer4 / real8 / complex16 / logical2 (any case, with or without '*').
_FIXED_PATTERN: Final = re.compile(
    r"(u?int(8|16|32|64)_t|b?float(16|32|64|128)(_t)?"
    r"|(integer|real|complex|logical)\*?(1|2|4|8|16|32))",
    re.IGNORECASE,
)


def is_fixed(name: str) -> bool:
    """Whether an element type's size is the same on every architecture (given by its name)."""
    return name in _FIXED_NAMES or _FIXED_PATTERN.fullmatch(name) is not None


# -- the local architecture and external32 --------------------------------------------------------


def _long_double_format() -> LongDouble:
    info = np.finfo(np.longdouble)
    formats = {63: LongDouble.X87, 112: LongDouble.BINARY128, 52: LongDouble.BINARY64}
    if info.nmant in formats:
        return formats[info.nmant]
    if info.nmant in (104, 105, 106):
        return LongDouble.DOUBLE_DOUBLE
    raise RuntimeError(
        f"unknown long double format on this machine ({info.nmant} mantissa bits, "
        f"{np.dtype(np.longdouble).itemsize} bytes)"
    )


@functools.cache
def _local() -> Arch:
    # Read from the basics' own sizes (numpy's, that is the C compiler's, and ompy's Fortran
    # mapping): the local architecture must describe exactly what this process's packed
    # streams hold.
    sizes = {
        field: BASICS[name].size
        for name, (field, parts) in VARIABLE_TYPES.items()
        if parts == 1 and name in BASICS
    }
    return Arch(byteorder=sys.byteorder, long_double=_long_double_format(), **sizes)


#: MPI's external32 representation (MPI 4.1 section 14.5.2, its table of sizes).
EXTERNAL32: Final = Arch(
    byteorder="big",
    long_double=LongDouble.BINARY128,
    c_short=2,
    c_int=4,
    c_long=4,
    c_longlong=8,
    c_float=4,
    c_double=8,
    c_longdouble=16,
    c_bool=1,
    c_wchar=2,
    aint=8,
    offset=8,
    count=8,
    f_integer=4,
    f_real=4,
    f_double_precision=8,
    f_logical=4,
)


# -- the simulated foreign byte order ---------------------------------------------------------


def register_params(registry: Registry) -> None:
    """Register ``opal_arch_byteorder`` and ``opal_arch_byteorder_ranks`` (layer-wide, opal)."""
    registry.register(
        BYTEORDER_PARAM,
        ParamType.ENUM,
        "native",
        "Byte order this process presents to its peers: 'native' is the machine's own; 'big' or "
        "'little' simulates a peer of that byte order (its outgoing typed data is in that order "
        "and it converts what it receives), to test heterogeneous jobs on one machine",
        level=9,
        choices=("native", *BYTEORDERS),
        scope=("opal", ""),
    )
    registry.register(
        BYTEORDER_RANKS_PARAM,
        ParamType.LIST,
        (),
        "The job ranks opal_arch_byteorder applies to, comma-separated (empty: every rank); "
        "'ompy run -n 3 --mca opal_arch_byteorder big --mca opal_arch_byteorder_ranks 2' makes "
        "rank 2 a simulated big-endian peer of two native ones",
        level=9,
        scope=("opal", ""),
    )


def presented(registry: Registry, rank: int = 0) -> Arch:
    """The architecture process ``rank`` of its job publishes: the local one, in the byte order
    ``opal_arch_byteorder`` asks for when ``opal_arch_byteorder_ranks`` includes ``rank``."""
    register_params(registry)
    local = Arch.local()
    order = registry.get(BYTEORDER_PARAM)
    if order == "native":
        return local
    chosen = presenting_ranks(registry)
    if chosen and rank not in chosen:
        return local
    return local.with_byteorder(order)


def presenting_ranks(registry: Registry) -> tuple[int, ...]:
    """The ranks ``opal_arch_byteorder`` applies to (empty: every rank)."""
    register_params(registry)
    ranks = registry.resolve(BYTEORDER_RANKS_PARAM)
    try:
        chosen = tuple(sorted({int(item) for item in ranks.value}))
    except ValueError:
        chosen = (-1,)
    if any(rank < 0 for rank in chosen):
        raise ParamValueError(
            BYTEORDER_RANKS_PARAM, ranks.text, ranks.source, "a comma-separated list of ranks"
        )
    return chosen


# -- every peer's architecture --------------------------------------------------------------------


class ModexReader(Protocol):
    """The one modex call :class:`PeerArchs` makes (``ompy.opal.modex.Modex`` has it)."""

    def get(self, rank: int, key: str) -> Any: ...


class PeerArchs:
    """The architecture of every process of a job, as each published it in the modex.

    ``memory`` is how this process holds data (always :meth:`Arch.local`); ``published`` is
    what it told its peers (the local one, or a simulated foreign one).  Peers are read from
    the modex the first time they are asked about and kept; a process without a modex (a
    loopback instance) knows only itself and every rank it is asked about is like it.
    """

    def __init__(
        self,
        modex: ModexReader | None = None,
        *,
        rank: int = 0,
        published: Arch | None = None,
        memory: Arch | None = None,
    ) -> None:
        self.memory = Arch.local() if memory is None else memory
        self.published = self.memory if published is None else published
        self.rank = rank
        self._modex = modex
        self._archs: dict[int, Arch] = {rank: self.published}
        self._foreign: dict[int, Arch | None] = {}
        self._lock = threading.Lock()

    @property
    def simulated(self) -> bool:
        """Whether this process presents an architecture other than its own memory's."""
        return self.published != self.memory

    def of(self, rank: int) -> Arch:
        """The architecture ``rank`` published (``ValueError`` if its record is malformed)."""
        arch = self._archs.get(rank)
        if arch is not None:
            return arch
        if self._modex is None:
            return self.published
        record = self._modex.get(rank, MODEX_KEY)
        try:
            arch = Arch.decode(record)
        except ValueError as error:
            raise ValueError(f"rank {rank} published a bad architecture: {error}") from None
        with self._lock:
            self._archs[rank] = arch
        return arch

    def foreign(self, rank: int) -> Arch | None:
        """The architecture of data that comes *from* ``rank``, when this process must convert
        it to its memory's (receiver makes right); None when it arrives ready to use."""
        try:
            return self._foreign[rank]
        except KeyError:
            pass
        arch = self.of(rank)
        result = None if arch == self.memory else arch
        with self._lock:
            self._foreign[rank] = result
        return result

    def outgoing(self) -> Arch | None:
        """The architecture this process's outgoing typed data must be converted to, or None
        (only a simulated foreign process converts what it sends)."""
        return self.published if self.simulated else None
