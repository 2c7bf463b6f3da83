"""Buffer specifications: the messages uppercase methods accept, made ready for the PML.

A program names a message the way mpi4py lets it::

    buf                                  the whole buffer, datatype inferred from its type
    [buf, datatype]                      the whole buffer, as elements of ``datatype``
    [buf, count]                         ``count`` elements, datatype inferred
    [buf, count, datatype]               ``count`` elements of ``datatype``
    [buf, (count, displ), datatype]      ``count`` elements starting ``displ`` elements in
    [buf, count, displ, datatype]        the same
    None, MPI.BOTTOM                     an empty message
    [MPI.BOTTOM, count, datatype]        absolute addresses: a datatype built from Get_address
    MPI.IN_PLACE                         "in place", for the send buffer of a collective

The vector collectives (Scatterv, Gatherv, Alltoallv, ...) name one block per process; their
forms are read by :mod:`ompy.ompi.api.vector_messages` into a :class:`VectorBufferSpec`.

``buf`` is anything that exports the buffer protocol (numpy arrays, bytes, bytearray,
``array.array``, memoryview), or host memory exported through DLPack, the CUDA array interface
or ``__array_interface__`` (:mod:`.exporters`; device memory is refused).  ``datatype`` is a
:class:`Datatype` (predefined, or derived and committed) or a code such as ``"d"`` or ``"i4"``.
Counts and displacements are in elements of the datatype (displacements step by its extent).
What comes out is a :class:`BufferSpec`: its count and datatype, and either a flat byte
memoryview of exactly the message (a contiguous layout: zero copy) or an opal ``Convertor`` that
packs and unpacks it (a non-contiguous derived datatype).  Ranks are the caller's business: with
``PROC_NULL`` the API layer does not parse the message at all, as mpi4py does.

An ompy extension: a non-contiguous numpy array (``a[::2]``, a column ``b[:, 3]``, any strided
view) is accepted as it is; its layout becomes a derived datatype built from its shape and
strides (:func:`strided_spec`), so no copy is made by the program.
"""

from __future__ import annotations

import functools
import operator
import re
import sys
from typing import Any

import attrs
import numpy as np

from ompy.opal.datatype.convertor import Convertor

from ..constants import BOTTOM, IN_PLACE
from ..errors import ERR_COUNT, ERR_TYPE
from ..errors import Exception as MPIException
from .absolute import absolute_memory
from .datatype import Datatype
from .exporters import host_array
from .layout import Layout, freed_datatype_error
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
    """The buffer's elements are not adjacent in memory (a strided view or slice).

    :func:`export_buffer` raises it; :func:`parse_buffer` catches it and describes the layout
    with a derived datatype instead (:func:`strided_spec`), so programs do not see it.
    """


@attrs.define(slots=True, eq=False)
class BufferSpec:
    """One message: its bytes, and how many elements of which datatype they hold.

    Without a ``convertor``, ``view`` is a flat, byte-format memoryview of exactly the message:
    its packed stream (``count * size`` bytes of a contiguous layout starting ``offset`` bytes
    into ``buffer``, the whole exported buffer; or a copy already packed, as a buffered send
    makes).  With one (a non-contiguous layout) ``view`` is empty and the convertor packs and
    unpacks the ``count`` elements whose displacement 0 is byte ``offset`` of ``buffer``.
    """

    view: memoryview
    count: int
    datatype: Datatype
    buffer: memoryview
    offset: int = 0
    #: True only for ``MPI.IN_PLACE`` (then the other fields describe an empty message).
    in_place: bool = False
    #: The convertor of a non-contiguous layout; None when ``view`` holds the message.
    convertor: Convertor | None = None

    @property
    def nbytes(self) -> int:
        """Bytes in the message's packed stream (``count`` times the datatype's size)."""
        convertor = self.convertor
        return self.view.nbytes if convertor is None else convertor.packed_size

    def packed(self) -> memoryview:
        """The message's packed stream: ``view`` itself, or a packed copy (convertor)."""
        convertor = self.convertor
        return self.view if convertor is None else convertor.pack_all()


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
                try:
                    view = view.cast("B")
                except TypeError:  # an empty array with a zero in its shape: (3, 0)
                    view = memoryview(bytearray(0))
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
        if count and datatype is not None and not displ:
            return _absolute_spec(count, datatype, readonly=readonly)
        if count:
            raise ValueError(
                f"message: MPI.BOTTOM (or None) as buffer with count {count} addresses absolute "
                "memory: give the datatype built from MPI.Get_address (and no displacement), "
                "or a buffer object"
            )
        return BufferSpec(_EMPTY, 0, datatype or BYTE, _EMPTY)

    try:
        buffer, inferred = export_buffer(obj, readonly=readonly, infer=datatype is None)
    except NonContiguousBufferError:
        return strided_spec(obj, datatype, count, displ, readonly=readonly)
    datatype = datatype or inferred
    layout = usable_layout(datatype)
    extent = layout.extent
    length = buffer.nbytes
    if count is None:
        count = _whole_elements(length - displ * extent, extent, datatype, obj, displ)
    offset = displ * extent
    if not layout.contiguous and count:
        return _derived_spec(obj, buffer, offset, count, datatype, readonly=readonly)
    nbytes = count * extent
    if offset + nbytes > length:
        raise ValueError(
            f"message: {count} x {datatype.Get_name()} ({nbytes} bytes)"
            + (f" at displacement {displ} ({offset} bytes)" if displ else "")
            + f" does not fit in the buffer of {length} bytes ({_describe(obj)})"
        )
    view = buffer if nbytes == length else buffer[offset : offset + nbytes]
    return BufferSpec(view, count, datatype, buffer, offset)


def usable_layout(datatype: Datatype) -> Layout:
    """The layout of a datatype a message may use: not freed, and committed."""
    layout = datatype.layout  # ERR_TYPE for DATATYPE_NULL
    if layout.freed:
        raise freed_datatype_error(layout, "message")
    if not layout.committed:
        name = datatype.Get_name()
        raise MPIException(
            ERR_TYPE,
            f"message: the {f'datatype {name}' if name else 'derived datatype'} is not "
            "committed; call its Commit() method (t = t.Commit()) before using it in a "
            "communication",
        )
    return layout


def spec_of(
    buffer: memoryview, offset: int, count: int, datatype: Datatype, *, readonly: bool = True
) -> BufferSpec:
    """The spec of ``count`` elements of ``datatype`` from byte ``offset`` of ``buffer`` (a
    flat byte view): a view when the layout is contiguous, else a convertor."""
    layout = usable_layout(datatype)
    if layout.contiguous or not count:
        nbytes = count * layout.size
        if offset + nbytes > buffer.nbytes:
            raise ValueError(
                f"message: {count} x {datatype.Get_name()} at byte {offset} does not fit in the "
                f"buffer of {buffer.nbytes} bytes"
            )
        return BufferSpec(buffer[offset : offset + nbytes], count, datatype, buffer, offset)
    return _derived_spec(buffer, buffer, offset, count, datatype, readonly=readonly)


def _absolute_spec(count: int, datatype: Datatype, *, readonly: bool) -> BufferSpec:
    """``[MPI.BOTTOM, count, datatype]``: the displacements are addresses (``Get_address``)."""
    layout = usable_layout(datatype)
    memory, origin = absolute_memory(layout, count, "message")
    if not readonly and layout.overlaps(count):
        raise MPIException(
            ERR_TYPE,
            "message: the receive datatype covers some bytes twice (its typemap overlaps), so a "
            "receive into it is undefined",
        )
    convertor = Convertor(layout.description, memory, origin, count)
    view = convertor.contiguous_view()
    if view is not None:
        return BufferSpec(view, count, datatype, memory, origin)
    return BufferSpec(_EMPTY, count, datatype, memory, origin, convertor=convertor)


def _derived_spec(
    obj: Any, buffer: memoryview, offset: int, count: int, datatype: Datatype, *, readonly: bool
) -> BufferSpec:
    """The spec of ``count`` elements of a non-contiguous datatype: a convertor over ``buffer``."""
    description = datatype.layout.description
    if not readonly and datatype.layout.overlaps(count):
        raise MPIException(
            ERR_TYPE,
            f"message: the receive datatype {datatype.Get_name() or '(derived)'} covers some "
            "bytes twice (its typemap overlaps), so a receive into it is undefined; use a "
            "layout where every byte appears once",
        )
    try:
        convertor = Convertor(description, buffer, offset, count)
    except ValueError as error:
        raise ValueError(
            f"message: {count} x {datatype.Get_name() or 'derived datatype'} at byte {offset} "
            f"does not fit in the buffer ({_describe(obj)}): {error}"
        ) from None
    view = convertor.contiguous_view()
    if view is not None:  # contiguous after all (e.g. a shifted lower bound): no copy
        return BufferSpec(view, count, datatype, buffer, offset)
    return BufferSpec(_EMPTY, count, datatype, buffer, offset, convertor=convertor)


def strided_spec(
    obj: Any,
    datatype: Datatype | None = None,
    count: int | None = None,
    displ: int = 0,
    *,
    readonly: bool = True,
) -> BufferSpec:
    """The spec of a non-contiguous array, through a datatype made from its shape and strides.

    An ompy extension (mpi4py refuses such buffers): ``comm.Send(a[::2], ...)`` or
    ``comm.Recv(b[:, 3], ...)`` move the array's elements where they lie, in C (row-major)
    order, without a copy by the program.  The message is the whole array; its elements are
    of the array's own predefined datatype (a datatype given with it must be that one).
    """
    array = _as_array(obj)
    element = datatype_of_dtype(array.dtype)
    if datatype is not None and datatype != element:
        raise TypeError(
            f"message: the buffer ({_describe(array)}) is not contiguous, and the datatype "
            f"{datatype.Get_name()} is not its element type {element.Get_name()}; ompy sends a "
            "strided array as its own elements: give no datatype, or a contiguous buffer"
        )
    if count not in (None, array.size) or displ:
        raise ValueError(
            f"message: the buffer ({_describe(array)}) is not contiguous; ompy sends such an "
            f"array whole ({array.size} elements), so a count ({count}) or a displacement "
            f"({displ}) cannot be given with it: slice the array instead"
        )
    if not readonly and not array.flags.writeable:
        raise ReadOnlyBufferError(
            f"message: the receive buffer ({_describe(array)}) is read-only; "
            "receive into a writable array"
        )
    if array.size == 0:
        return BufferSpec(_EMPTY, 0, element, _EMPTY)
    region, origin = _strided_region(array)
    description = _strided_description(array.dtype, array.shape, array.strides)
    if not readonly and description.overlaps():
        raise MPIException(
            ERR_TYPE,
            f"message: the receive buffer ({_describe(array)}, strides {array.strides}) "
            "holds some elements more than once (a zero stride or overlapping view), so a "
            "receive into it is undefined; receive into an array without repeats",
        )
    convertor = Convertor(description, region, origin, 1)
    view = convertor.contiguous_view()
    if view is not None:
        return BufferSpec(view, array.size, element, region, origin)
    return BufferSpec(_EMPTY, array.size, element, region, origin, convertor=convertor)


@functools.lru_cache(maxsize=64)
def _strided_description(dtype: np.dtype, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
    """The layout of an array of ``shape`` and ``strides`` (C order), as an opal Description.

    Memoized: a program sends arrays of the same shape again and again, and building the
    description and its convertor plan costs about as much as packing a large one (a vector of
    a million elements is a million runs to compile); descriptions are immutable.
    """
    description = datatype_of_dtype(dtype).layout.description
    for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
        if extent > 1:
            description = description.hvector(extent, 1, stride)
    return description


def _as_array(obj: Any) -> np.ndarray:
    """``obj`` as a numpy array sharing its memory (strides kept)."""
    if isinstance(obj, np.ndarray):
        return obj
    try:
        return np.asarray(memoryview(obj))
    except TypeError:
        return _array_from_protocols(obj)[0]


def _strided_region(array: np.ndarray) -> tuple[memoryview, int]:
    """The flat bytes from the lowest to the highest byte of ``array``, and where its first
    element lies in them (a negative stride puts it after others)."""
    low = high = 0
    corner = []
    for extent, stride in zip(array.shape, array.strides, strict=True):
        reach = (extent - 1) * stride
        if stride < 0:
            low += reach
            corner.append(slice(extent - 1, extent))
        else:
            high += reach
            corner.append(slice(0, 1))
    itemsize = array.itemsize
    span = high - low + itemsize
    lowest = array[tuple(corner)]  # the element at the lowest address, as an array
    items = -(-span // itemsize)
    flat = np.lib.stride_tricks.as_strided(lowest, shape=(items,), strides=(itemsize,))
    region = flat.reshape(-1).view(np.uint8)[:span]
    return memoryview(region), -low


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
