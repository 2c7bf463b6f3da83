"""Buffer specifications: the messages uppercase methods accept, made ready for the PML.

A program names a message the way mpi4py lets it::

    buf                                  the whole buffer, datatype inferred from its type
    [buf, datatype]                      the whole buffer, as elements of ``datatype``
    [buf, count]                         ``count`` elements, datatype inferred
    [buf, count, datatype]               ``count`` elements of ``datatype``
    [buf, (count, displ), datatype]      ``count`` elements starting ``displ`` elements in
    [buf, count, displ, datatype]        the same
    None, MPI.BOTTOM                     an empty message (absolute addresses: count 0 only)
    MPI.IN_PLACE                         "in place", for the send buffer of a collective

The vector collectives (Scatterv, Gatherv, Alltoallv, ...) name one block per process; their
forms are read by :mod:`ompy.ompi.api.vector_messages` into a :class:`VectorBufferSpec`.

``buf`` is anything that exports the buffer protocol (numpy arrays, bytes, bytearray,
``array.array``, memoryview), or host memory exported through DLPack, the CUDA array interface
or ``__array_interface__`` (:mod:`.exporters`; device memory is refused); it must be contiguous
(C or Fortran order).  ``datatype`` is a :class:`Datatype` or a code such as ``"d"`` or
``"i4"``.  Counts and displacements are in elements of the datatype.  What comes out is a
:class:`BufferSpec`: a flat byte memoryview of exactly the message, its count and datatype.
Ranks are the caller's business: with ``PROC_NULL`` the API layer does not parse the message
at all, as mpi4py does.
"""

from __future__ import annotations

import operator
import re
import sys
from typing import Any

import attrs
import numpy as np

from ..constants import BOTTOM, IN_PLACE
from ..errors import ERR_COUNT, ERR_TYPE
from ..errors import Exception as MPIException
from .datatype import Datatype
from .exporters import host_array
from .predefined import (
    BYTE,
    DOUBLE_INT,
    FLOAT_INT,
    LONG_DOUBLE_INT,
    LONG_INT,
    SHORT_INT,
    TWOINT,
    TYPECHARS,
    from_code,
)


class ReadOnlyBufferError(BufferError, TypeError):
    """A read-only buffer was given where data must be written (a receive buffer).

    It is a ``BufferError``, as mpi4py raises, and a ``TypeError`` for code that expects one.
    """


class NonContiguousBufferError(BufferError, ValueError):
    """The buffer's elements are not adjacent in memory (a strided view or slice)."""


@attrs.define(slots=True, eq=False)
class BufferSpec:
    """One message: its bytes, and how many elements of which datatype they hold.

    ``view`` is a flat, byte-format memoryview of exactly the message (``count * extent``
    bytes starting ``offset`` bytes into ``buffer``, the whole exported buffer).
    """

    view: memoryview
    count: int
    datatype: Datatype
    buffer: memoryview
    offset: int = 0
    #: True only for ``MPI.IN_PLACE`` (then the other fields describe an empty message).
    in_place: bool = False

    @property
    def nbytes(self) -> int:
        """Bytes in the message (``count`` times the datatype's extent)."""
        return self.view.nbytes


@attrs.define(slots=True, eq=False)
class VectorBufferSpec:
    """One buffer cut into blocks, one per process: ``counts[i]`` elements at ``displs[i]``."""

    buffer: memoryview
    counts: tuple[int, ...]
    displs: tuple[int, ...]
    datatype: Datatype
    in_place: bool = False

    def block(self, index: int) -> memoryview:
        """The bytes of block ``index``."""
        extent = self.datatype.extent
        start = self.displs[index] * extent
        return self.buffer[start : start + self.counts[index] * extent]


_EMPTY = memoryview(b"")
#: What ``MPI.IN_PLACE`` parses to: no data of its own.
IN_PLACE_SPEC = BufferSpec(_EMPTY, 0, BYTE, _EMPTY, 0, in_place=True)

#: Buffer formats of one native element that map to a predefined datatype, for the fast path
#: (numpy arrays export these for their basic native dtypes; bytes and bytearray export "B").
_SIMPLE_FORMATS: dict[str, Datatype] = {
    code: TYPECHARS[code] for code in "?bhilqBHILQfdg" if code in TYPECHARS
}
_NATIVE_ORDER = "<" if sys.byteorder == "little" else ">"


# -- public entry points -------------------------------------------------------------------------


def parse_buffer(msg: Any, *, readonly: bool = True, in_place: bool = False) -> BufferSpec:
    """Turn a message specification into a :class:`BufferSpec`.

    ``readonly=False`` is for receive buffers, which must be writable.  ``in_place=True``
    admits ``MPI.IN_PLACE`` (the send buffer of a collective).
    """
    kind = type(msg)
    if kind is np.ndarray or kind is bytes or kind is bytearray:
        # The common case, kept short: a whole contiguous buffer of a basic native type.
        view = memoryview(msg)
        datatype = _SIMPLE_FORMATS.get(view.format)
        if datatype is not None and view.c_contiguous and (readonly or not view.readonly):
            if view.ndim != 1 or view.format != "B":
                view = view.cast("B")
            return BufferSpec(view, view.nbytes // datatype.layout.extent, datatype, view)
    elif msg is IN_PLACE:
        if not in_place:
            raise TypeError(
                "message: MPI.IN_PLACE is only valid as the send buffer of a collective operation"
            )
        return IN_PLACE_SPEC
    obj, count_spec, type_spec = _split_simple(msg)
    datatype = None if type_spec is None else _as_datatype(type_spec)
    count, displ = _count_and_displ(count_spec)

    if obj is None or obj is BOTTOM:
        if count:
            raise ValueError(
                f"message: MPI.BOTTOM (or None) as buffer with count {count} would address "
                "absolute memory, which ompy does not support; give a buffer object instead"
            )
        return BufferSpec(_EMPTY, 0, datatype or BYTE, _EMPTY)

    buffer, inferred = export_buffer(obj, readonly=readonly, infer=datatype is None)
    datatype = datatype or inferred
    extent = _extent(datatype)
    length = buffer.nbytes
    if count is None:
        count = _whole_elements(length - displ * extent, extent, datatype, obj, displ)
    offset = displ * extent
    nbytes = count * extent
    if offset + nbytes > length:
        raise ValueError(
            f"message: {count} x {datatype.Get_name()} ({nbytes} bytes)"
            + (f" at displacement {displ} ({offset} bytes)" if displ else "")
            + f" does not fit in the buffer of {length} bytes ({_describe(obj)})"
        )
    view = buffer if nbytes == length else buffer[offset : offset + nbytes]
    return BufferSpec(view, count, datatype, buffer, offset)


def export_buffer(
    obj: Any, *, readonly: bool = True, infer: bool = True
) -> tuple[memoryview, Datatype | None]:
    """A flat byte memoryview of ``obj``'s memory and, if ``infer``, the datatype of its items."""
    exporter = obj
    try:
        view = memoryview(obj)
        why_readonly = ""
    except TypeError:
        obj, why_readonly = _array_from_protocols(obj)
        view = memoryview(obj)
    if "O" in view.format and _holds_objects(obj, view):
        raise TypeError(
            f"message: the buffer ({_describe(obj)}) holds references to Python objects, not "
            "data: their addresses would be sent or overwritten; send Python objects with the "
            "lowercase methods (comm.send, comm.bcast, ...) or use a numeric dtype"
        )
    if not readonly and view.readonly:
        raise ReadOnlyBufferError(
            f"message: the receive buffer ({_describe(exporter)}) is read-only"
            + (f" ({why_readonly})" if why_readonly else "")
            + "; receive into a writable object such as a numpy array or a bytearray"
        )
    datatype = None
    if infer:
        if isinstance(obj, np.ndarray):
            datatype = datatype_of_dtype(obj.dtype)
        else:
            datatype = _datatype_of_format(view)
    if not view.c_contiguous:
        if not view.f_contiguous:
            raise NonContiguousBufferError(
                f"message: the buffer ({_describe(obj)}) is not contiguous in memory; "
                "pass a contiguous copy (numpy.ascontiguousarray) or describe the layout "
                "with a derived datatype"
            )
        view = memoryview(np.asarray(view).T)  # Fortran order: the transpose is C order
    if view.ndim != 1 or view.format != "B":
        try:
            view = view.cast("B")
        except TypeError:  # formats cast() does not handle: 'Zd', '<d', 'T{...}', '3s'
            view = memoryview(np.asarray(view).reshape(-1).view(np.uint8))
    return view, datatype


def _holds_objects(obj: Any, view: memoryview) -> bool:
    """Whether the items of ``obj`` are (or contain) ``PyObject`` pointers (format ``'O'``)."""
    if isinstance(obj, np.ndarray):
        return obj.dtype.hasobject
    # Any other exporter: the format's type codes, field names (``:name:``) left out.
    return "O" in re.sub(r":[^:]*:", "", view.format)


def datatype_of_dtype(dtype: np.dtype) -> Datatype:
    """The predefined datatype of a numpy dtype, or a TypeError that says why there is none."""
    if dtype.fields is not None:
        datatype = _PAIRS.get(_pair_shape(dtype))
        if datatype is None:
            raise TypeError(
                f"message: no predefined MPI datatype matches the structured dtype {dtype}; "
                "give one explicitly, e.g. [buf, MPI.BYTE]"
            )
        return datatype
    if not dtype.isnative:
        raise TypeError(
            f"message: the buffer's dtype {dtype.str} is not in this machine's byte order; "
            "convert it first (array.astype(array.dtype.newbyteorder('=')))"
        )
    datatype = TYPECHARS.get(dtype.char)
    if datatype is None:
        raise TypeError(
            f"message: no MPI datatype corresponds to the dtype {dtype} (code {dtype.char!r}); "
            "convert the array or give a datatype explicitly, e.g. [buf, MPI.BYTE]"
            + (
                " (object arrays hold Python references: use the lowercase methods)"
                if dtype.char == "O"
                else ""
            )
        )
    return datatype


# -- helpers ------------------------------------------------------------------------------------


def _split_simple(msg: Any) -> tuple[Any, Any, Any]:
    """(buffer, count spec, datatype spec) of a simple message."""
    if type(msg) is not list and type(msg) is not tuple:
        return msg, None, None
    items = len(msg)
    if items == 2:
        obj, second = msg
        if isinstance(second, Datatype | str):
            return obj, None, second
        return obj, second, None
    if items == 3:
        return msg[0], msg[1], msg[2]
    if items == 4:
        return msg[0], (msg[1], msg[2]), msg[3]
    raise ValueError(
        f"message: expecting a buffer or a list of 2 to 4 items ([buf, datatype], "
        f"[buf, count, datatype], [buf, (count, displ), datatype], [buf, count, displ, "
        f"datatype]), got {items} items"
    )


def _as_datatype(spec: Any) -> Datatype:
    if isinstance(spec, Datatype):
        if not spec:
            raise MPIException(
                ERR_TYPE, "message: the datatype is DATATYPE_NULL (a null or freed datatype)"
            )
        return spec
    if isinstance(spec, str):
        return from_code(spec)
    raise TypeError(
        f"message: expecting a Datatype or a type code such as 'd' as datatype, not "
        f"{type(spec).__name__} {spec!r}"
    )


def _count_and_displ(spec: Any) -> tuple[int | None, int]:
    if spec is None:
        return None, 0
    if type(spec) in (list, tuple):
        if len(spec) != 2:
            raise ValueError(
                f"message: expecting (count, displacement), got {len(spec)} items: {spec!r}"
            )
        count, displ = spec
        count = None if count is None else _count(count)
        return count, _displacement(displ)
    return _count(spec), 0


def _count(value: Any) -> int:
    count = _as_int(value, "count")
    if count < 0:
        raise MPIException(ERR_COUNT, f"message: the count must not be negative, got {count}")
    return count


def _displacement(value: Any) -> int:
    if value is None:
        return 0
    displ = _as_int(value, "displacement")
    if displ < 0:
        raise ValueError(f"message: the displacement must not be negative, got {displ}")
    return displ


def _as_int(value: Any, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"message: expecting an int {what}, not {type(value).__name__} {value!r}"
        ) from None


def _extent(datatype: Datatype) -> int:
    return datatype.layout.extent


def _whole_elements(length: int, extent: int, datatype: Datatype, obj: Any, displ: int) -> int:
    if length < 0:
        raise ValueError(
            f"message: displacement {displ} x {datatype.Get_name()} lies beyond the end of the "
            f"buffer ({_describe(obj)})"
        )
    if extent == 0:
        raise ValueError(f"message: {datatype.Get_name()} has extent 0, so the count must be given")
    count, rest = divmod(length, extent)
    if rest:
        raise ValueError(
            f"message: the buffer's {length} bytes ({_describe(obj)}) are not a whole number "
            f"of {datatype.Get_name()} elements of {extent} bytes; give the count explicitly "
            "or a datatype that fits"
        )
    return count


def _array_from_protocols(obj: Any) -> tuple[np.ndarray, str]:
    """A host array for an object without the buffer protocol, and why it is read-only (if it
    is): DLPack, ``__cuda_array_interface__`` or ``__array_interface__`` (:mod:`.exporters`)."""
    return host_array(obj)


_FORMATS: dict[str, Datatype] = {}


def _datatype_of_format(view: memoryview) -> Datatype:
    """The datatype of a PEP 3118 format string (``'d'``, ``'<i'``, ``'Zd'``, ``'3s'``)."""
    fmt = view.format
    datatype = _FORMATS.get(fmt)
    if datatype is not None:
        return datatype
    code = fmt
    if code[:1] in "@=" or code[:1] == _NATIVE_ORDER:
        code = code[1:]
    code = code.lstrip("0123456789")
    if code in ("Zf", "Zd", "Zg"):
        code = code[1].upper()
    if code[:1] in "<>!" or code.startswith("T{") or code not in TYPECHARS:
        datatype = datatype_of_dtype(np.asarray(view).dtype)  # numpy understands the rest
    else:
        datatype = TYPECHARS[code]
    _FORMATS[fmt] = datatype
    return datatype


def _pair_shape(dtype: np.dtype) -> tuple:
    fields = tuple((sub.char, offset) for sub, offset, *_ in dtype.fields.values())
    return (*fields, dtype.itemsize)


_PAIRS: dict[tuple, Datatype] = {
    _pair_shape(pair.dtype): pair
    for pair in (FLOAT_INT, DOUBLE_INT, LONG_INT, TWOINT, SHORT_INT, LONG_DOUBLE_INT)
}


def _describe(obj: Any) -> str:
    if isinstance(obj, np.ndarray):
        return f"numpy array of shape {obj.shape} and dtype {obj.dtype}"
    if obj is None:
        return "None"
    return f"{type(obj).__name__} object"
