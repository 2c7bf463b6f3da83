"""``MPI.buffer`` (alias ``MPI.memory``): raw memory as mpi4py's ``buffer`` object shows it.

An mpi4py ``buffer`` is a flat run of bytes with an address: made by ``buffer.allocate``,
wrapped around another object's memory (``buffer(obj)``, ``buffer.frombuffer``), or around an
address and a size (``buffer.fromaddress``), and returned by ``MPI.Alloc_mem``.  It exports the
buffer protocol (format ``"B"``, one dimension), indexes as unsigned bytes and slices (step 1
only) into further buffers over the same memory.

Why a numpy array subclass: a class written in Python can export the buffer protocol only from
Python 3.12 on (``__buffer__``, PEP 688), and ompy supports 3.11.  ``numpy.ndarray`` is the one
subclassable exporter that can lie over any memory (another object's, or an address given by
the program through ``ctypes``) and exports it with format ``"B"`` as mpi4py's buffer does.  The
numeric side of the array is switched off (``__array_ufunc__ = None``: ``buf + 1`` raises
``TypeError``), and indexing, length, truth, equality and hashing behave as mpi4py's ``buffer``.

One difference remains: ``release()`` (and ``Free_mem``) makes the object report an empty
buffer at address 0, as mpi4py's does, but an array cannot drop its memory, so a
``memoryview`` taken of the released object still sees the former bytes, read-only.  The memory
itself is returned to the system once no object refers to it.
"""

from __future__ import annotations

import ctypes
import mmap
import operator
from typing import Any, NoReturn, SupportsIndex

import numpy as np

from .constants import BOTTOM, BUFFER_AUTOMATIC, IN_PLACE
from .datatype.buffer import export_buffer

#: Bits of ``MPI_Aint``: a signed integer as wide as a pointer.
AINT_BITS = ctypes.sizeof(ctypes.c_ssize_t) * 8
AINT_MIN = -(1 << (AINT_BITS - 1))
AINT_MAX = (1 << (AINT_BITS - 1)) - 1
_ADDRESS_LIMIT = 1 << AINT_BITS

_NOTHING: Any = object()


class buffer(np.ndarray):  # noqa: N801  (mpi4py's name)
    """Buffer."""

    __array_ufunc__ = None  # type: ignore[assignment]  # not a number: arithmetic raises TypeError

    _obj: Any
    _address: int
    _readonly: bool
    _released: bool
    #: Made by ``MPI.Alloc_mem`` and not freed yet (what ``MPI.Free_mem`` accepts).
    _allocated: bool

    def __new__(cls, buf: Any = _NOTHING) -> buffer:
        if buf is _NOTHING:
            return _empty()
        view = _byte_view(buf, "buffer")
        return _wrap(view, buf, readonly=view.readonly)

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("type 'buffer' is not an acceptable base type")

    def __array_finalize__(self, obj: Any) -> None:
        # Views numpy makes of a buffer (slices, .view()) start as buffers of their own memory.
        self._obj = None
        self._readonly = not self.flags.writeable
        self._address = self.__array_interface__["data"][0] if self.size else 0
        self._released = False
        self._allocated = False

    # -- constructors ------------------------------------------------------------------------

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        """Buffer allocation."""
        size = _aint(nbytes, "buffer.allocate: nbytes")
        if size < 0:
            raise ValueError(f"buffer.allocate: expecting a non-negative size, not {size}")
        memory = bytearray(size)  # zeroed either way: Python has no uninitialized allocation
        return _wrap(memoryview(memory), memory, readonly=False)

    @staticmethod
    def frombuffer(obj: Any, readonly: bool = False) -> buffer:
        """Buffer from buffer-like object."""
        view = _byte_view(obj, "buffer.frombuffer")
        if view.readonly and not readonly:
            raise BufferError(
                f"buffer.frombuffer: the {type(obj).__name__} object is read-only; pass "
                "readonly=True or a writable object"
            )
        return _wrap(view, obj, readonly=bool(readonly))

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> buffer:
        """Buffer from address and size in bytes."""
        address = operator.index(address)
        size = _aint(nbytes, "buffer.fromaddress: nbytes")
        if size < 0:
            raise ValueError(f"buffer.fromaddress: expecting a non-negative length, not {size}")
        if not 0 <= address < _ADDRESS_LIMIT:
            raise OverflowError(f"buffer.fromaddress: {address} is not a memory address")
        if size > 0 and address == 0:
            raise ValueError("buffer.fromaddress: expecting a non-NULL address for a length > 0")
        if size == 0:
            return _wrap(memoryview(bytearray()), None, readonly=bool(readonly), address=address)
        memory: Any = (ctypes.c_char * size).from_address(address)  # exports the buffer protocol
        array = np.ndarray((size,), dtype=np.uint8, buffer=memory)
        return _adopt(array, None, readonly=bool(readonly), address=address)

    # -- properties ------------------------------------------------------------------------------

    @property
    def address(self) -> int:
        """Buffer address."""
        return self._address

    @property
    def obj(self) -> Any:
        """Object exposing buffer."""
        return self._obj

    @property  # mpi4py's meaning: the bytes exposed now (0 once released)
    def nbytes(self) -> int:
        """Buffer size (in bytes)."""
        return 0 if self._released else self.size

    @property
    def readonly(self) -> bool:
        """Buffer is read-only."""
        return self._readonly

    @property
    def format(self) -> str:
        """Format of each element."""
        return "B"

    # -- methods -----------------------------------------------------------------------------

    def cast(self, format: str, shape: Any = ...) -> memoryview:
        """Cast to a `memoryview` with new format or shape."""
        view: Any = self._memoryview()  # typeshed types cast() per literal format
        return view.cast(format) if shape is Ellipsis else view.cast(format, shape)

    def tobytes(self, order: str | None = None) -> bytes:
        """Return the data in the buffer as a byte string."""
        return self._memoryview().tobytes()

    def toreadonly(self) -> buffer:
        """Return a readonly version of the buffer object."""
        owner = self if self._obj is None else self._obj
        if self._released:
            return _wrap(memoryview(b""), owner, readonly=True, address=0)
        return _adopt(np.ndarray.view(self, np.ndarray), owner, True, self._address)

    def release(self) -> None:
        """Release the underlying buffer exposed by the buffer object."""
        self._released = True
        self._allocated = False
        self._obj = None
        self._address = 0
        self._readonly = False
        if self.size:
            self.flags.writeable = False  # what still refers to the old memory cannot write

    # -- sequence ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return 0 if self._released else self.size

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Any:
        return iter(self.tobytes())

    def __getitem__(self, item: Any) -> Any:
        length = len(self)
        if isinstance(item, slice):
            start, stop = _byte_slice(item, length)
            piece = np.ndarray.__getitem__(self, slice(start, stop))
            return _adopt(piece, self, self._readonly, self._address + start)
        index = _byte_index(item, length)
        return int(np.ndarray.__getitem__(self, index))

    def __setitem__(self, item: Any, value: Any) -> None:
        if self._readonly:
            raise TypeError("buffer is read-only")
        length = len(self)
        if isinstance(item, slice):
            start, stop = _byte_slice(item, length)
            if isinstance(value, int | np.integer):  # fill, as memset
                np.ndarray.__setitem__(self, slice(start, stop), _byte_value(value))
                return
            source = _byte_view(value, "buffer slice assignment")
            if source.nbytes != stop - start:
                raise ValueError(
                    f"slice length does not match buffer: {stop - start} bytes to assign, "
                    f"{source.nbytes} given"
                )
            np.ndarray.__setitem__(self, slice(start, stop), np.frombuffer(source, dtype=np.uint8))
            return
        index = _byte_index(item, length)
        np.ndarray.__setitem__(self, index, _byte_value(value))

    def __delitem__(self, item: Any) -> NoReturn:
        raise NotImplementedError("buffer does not support item deletion")

    # -- identity semantics (not an array's element-wise ones) ---------------------------------

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:  # type: ignore[override]
        return object.__hash__(self)

    def __repr__(self) -> str:
        state = "readonly" if self._readonly else "writable"
        return f"<MPI.buffer address={self._address:#x} nbytes={self.nbytes} {state}>"

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        raise TypeError("cannot pickle 'buffer' object: it names memory of this process")

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        self.__reduce__()

    # -- helpers -----------------------------------------------------------------------------

    def _memoryview(self) -> memoryview:
        if self._released:
            return memoryview(bytearray())
        array: Any = np.ndarray.view(self, np.ndarray)  # numpy's stubs omit the buffer protocol
        return memoryview(array)


#: Backward compatibility alias (mpi4py's ``MPI.memory``).
memory = buffer


# -- memory for message passing --------------------------------------------------------------------


def allocate_pages(size: int, alignment: int) -> buffer:
    """``size`` bytes of anonymous memory starting at a multiple of ``alignment`` (a power of 2).

    Pages are mapped fresh (zeroed, page-aligned), as ``MPI_Alloc_mem`` memory is in Open MPI;
    larger alignments take a few more pages and start inside them.
    """
    if size == 0:
        return _wrap(memoryview(bytearray()), None, readonly=False, address=0)
    extra = max(0, alignment - mmap.PAGESIZE)
    pages = mmap.mmap(-1, size + extra)
    whole = np.frombuffer(pages, dtype=np.uint8)
    start = (-whole.__array_interface__["data"][0]) % alignment
    piece = whole[start : start + size]
    return _adopt(piece, None, False, int(piece.__array_interface__["data"][0]))


def address_of(location: Any) -> int:
    """The address of the first byte of ``location``'s memory (``MPI.Get_address``)."""
    if isinstance(location, buffer):
        return location.address
    if location is BOTTOM or location is IN_PLACE or location is BUFFER_AUTOMATIC:
        return int(location)  # the special addresses are their own address (as in mpi4py)
    view, _ = export_buffer(location, readonly=True, infer=False)
    return int(np.frombuffer(view, dtype=np.uint8).__array_interface__["data"][0])


def aint(value: Any, what: str) -> int:
    """An ``MPI_Aint`` argument: an integer that fits a signed pointer-sized integer."""
    return _aint(value, what)


def wrap_aint(value: int) -> int:
    """``value`` as the signed pointer-sized integer C address arithmetic produces."""
    value &= _ADDRESS_LIMIT - 1
    return value - _ADDRESS_LIMIT if value > AINT_MAX else value


# -- internals ----------------------------------------------------------------------------------


def _empty() -> buffer:
    return _wrap(memoryview(bytearray()), None, readonly=False, address=0)


def _wrap(view: memoryview, obj: Any, *, readonly: bool, address: int | None = None) -> buffer:
    array = np.ndarray((view.nbytes,), dtype=np.uint8, buffer=view)
    if address is None:
        address = int(array.__array_interface__["data"][0])
    return _adopt(array, obj, readonly, address)


def _adopt(array: np.ndarray, obj: Any, readonly: bool, address: int) -> buffer:
    result = array.view(buffer)
    if readonly and result.flags.writeable:
        result.flags.writeable = False
    result._obj = obj
    result._readonly = readonly
    result._address = address
    return result


def _byte_view(obj: Any, call: str) -> memoryview:
    """A flat byte view of ``obj``'s whole memory (buffer protocol, DLPack, array interface)."""
    if isinstance(obj, buffer):
        return obj._memoryview()
    try:
        view, _ = export_buffer(obj, readonly=True, infer=False)
    except TypeError:
        raise TypeError(
            f"{call}: expecting a buffer-like object (bytes, bytearray, numpy array, "
            f"memoryview, MPI.buffer, ...), not {type(obj).__name__}"
        ) from None
    return view


def _aint(value: Any, what: str) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None
    if not AINT_MIN <= number <= AINT_MAX:
        raise OverflowError(f"{what} = {number} does not fit in MPI_Aint ({AINT_BITS} bits)")
    return number


def _byte_index(item: Any, length: int) -> int:
    try:
        index = operator.index(item)
    except TypeError:
        raise TypeError(
            f"buffer index must be an integer or a slice, not {type(item).__name__}"
        ) from None
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError(f"buffer index out of range (length {length})")
    return index


def _byte_slice(item: slice, length: int) -> tuple[int, int]:
    start, stop, step = item.indices(length)
    if step != 1:
        raise IndexError("buffer slices with a step are not supported")
    return start, max(start, stop)


def _byte_value(value: Any) -> int:
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"a buffer byte must be an integer, not {type(value).__name__}") from None
    if not 0 <= number <= 255:
        raise OverflowError(f"a buffer byte is in 0..255, not {number}")
    return number
