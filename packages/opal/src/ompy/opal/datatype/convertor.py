"""The convertor: moves typed data between a user buffer and a packed byte stream.

A :class:`Convertor` binds a :class:`~ompy.opal.datatype.description.Description` to a buffer,
an origin and a count, and copies any byte range of the packed stream out of (``pack``) or into
(``unpack``) the buffer, so eager sends, rendezvous fragments and pipelined transfers all stop
and resume at arbitrary positions, even inside a basic element.

Each layout is compiled once into a :class:`Plan`, cached on its description:

* the element's data as contiguous byte blocks (runs merged whatever their basic);
* when every block has one length and their displacements form a regular grid (a vector, a
  subarray, a vector of vectors), the grid's shape and strides: ``count`` elements are then
  one n-dimensional strided numpy copy, dimensions that happen to be adjacent folded together,
  a block being one opaque numpy item (or rows of 8-byte integers when long);
* otherwise the blocks grouped by length, copied as rows of a byte view with numpy fancy
  indexing (one gather/scatter per distinct length), or as a byte-index gather when lengths are
  many.

A contiguous layout is never copied by :meth:`Convertor.contiguous_view` and
:meth:`Convertor.pack_all`: they hand out the buffer's own bytes.  No Python loop runs per
element or per block.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, Final, SupportsIndex

import attrs
import numpy as np
import numpy.typing as npt

from ompy.opal.datatype.description import Description

U8 = npt.NDArray[np.uint8]
IntArray = npt.NDArray[np.int64]

#: Above this many distinct block lengths a layout is copied byte-wise (one gather) rather than
#: one fancy-indexed gather/scatter per length.
MAX_LENGTH_GROUPS: Final = 8
#: Most dimensions a block grid may have before the layout counts as irregular.
MAX_GRID_DIMS: Final = 8


#: Blocks up to this many bytes are copied as one opaque numpy item (``V<length>``, copied by
#: memcpy); longer ones as rows of 8-, 4-, 2- or 1-byte integers.  Measured here: 12-byte blocks
#: copy twice as fast as ``V12`` than as three ``u4``, 16-byte blocks five times as fast.
MAX_OPAQUE_BLOCK: Final = 256


@functools.cache
def _unit(length: int) -> tuple[np.dtype[Any], int]:
    """The numpy item a block of ``length`` bytes is copied as, and how many make a block."""
    if length in (1, 2, 4, 8):
        return np.dtype(f"u{length}"), 1
    if length <= MAX_OPAQUE_BLOCK:
        return np.dtype(f"V{length}"), 1
    for width in (8, 4, 2):
        if length % width == 0:
            return np.dtype(f"u{width}"), length // width
    return np.dtype("u1"), length


def _strided(
    buf: U8, base: int, shape: Sequence[int], strides: Sequence[int], length: int
) -> np.ndarray:
    """A view of blocks of ``length`` bytes on a grid in ``buf`` (first block at ``base``).

    numpy checks that every block lies inside ``buf``.
    """
    unit, units = _unit(length)
    if units > 1:
        shape = (*shape, units)
        strides = (*strides, unit.itemsize)
    return np.ndarray(tuple(shape), dtype=unit, buffer=buf, offset=base, strides=tuple(strides))


def _simplify(
    shape: Sequence[int], src: Sequence[int], dst: Sequence[int], length: int
) -> tuple[list[int], list[int], list[int], int]:
    """Drop unit dimensions and fold dimensions adjacent in both buffers (and into ``length``)."""
    dims = [(n, s, d) for n, s, d in zip(shape, src, dst, strict=True) if n != 1]
    while dims and dims[-1][1] == length and dims[-1][2] == length:
        length *= dims.pop()[0]
    merged: list[tuple[int, int, int]] = []
    for n, s, d in dims:
        if merged:
            on, os_, od = merged[-1]
            # The previous (outer) dimension steps over exactly this whole inner dimension.
            if os_ == n * s and od == n * d:
                merged[-1] = (on * n, s, d)
                continue
        merged.append((n, s, d))
    return [m[0] for m in merged], [m[1] for m in merged], [m[2] for m in merged], length


def _rows(buf: U8, length: int) -> np.ndarray:
    """Every ``length``-byte window of ``buf`` as a row (row ``k`` starts at byte ``k``)."""
    unit, units = _unit(length)
    rows = len(buf) - length + 1
    if units == 1:
        shape: tuple[int, ...] = (rows,)
        strides: tuple[int, ...] = (1,)
    else:
        shape, strides = (rows, units), (1, unit.itemsize)
    return np.ndarray(shape, dtype=unit, buffer=buf, offset=0, strides=strides)


def _copy_rows(src: U8, src_offsets: IntArray, dst: U8, dst_offsets: IntArray, length: int) -> None:
    """Copy blocks of one length from ``src_offsets`` to ``dst_offsets`` (fancy indexing)."""
    if length == 0 or len(src_offsets) == 0:
        return
    target = _rows(dst, length)
    target[dst_offsets] = _rows(src, length)[src_offsets]


def _copy_bytes(
    src: U8, src_offsets: IntArray, dst: U8, dst_offsets: IntArray, lengths: IntArray
) -> None:
    """Copy blocks of any lengths through one byte-index gather and scatter."""
    total = int(lengths.sum())
    if total == 0:
        return
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    dst[np.repeat(dst_offsets, lengths) + within] = src[np.repeat(src_offsets, lengths) + within]


def _copy_blocks(
    src: U8, src_offsets: IntArray, dst: U8, dst_offsets: IntArray, lengths: IntArray
) -> None:
    """Copy blocks of varied lengths, grouped by length when there are few lengths."""
    if len(lengths) == 0:
        return
    distinct = np.unique(lengths)
    if len(distinct) == 1:
        _copy_rows(src, src_offsets, dst, dst_offsets, int(distinct[0]))
    elif len(distinct) <= MAX_LENGTH_GROUPS:
        for length in distinct.tolist():
            chosen = lengths == length
            _copy_rows(src, src_offsets[chosen], dst, dst_offsets[chosen], length)
    else:
        _copy_bytes(src, src_offsets, dst, dst_offsets, lengths)


def _grid_of(displ: IntArray) -> tuple[list[int], list[int]] | None:
    """``(shape, strides)`` when ``displ - displ[0]`` enumerates a regular grid in C order.

    The innermost dimension is the first run of equal steps; every row of that length must
    repeat the first row's pattern, and the rows' starts must form a grid in turn.
    """
    shape: list[int] = []
    strides: list[int] = []
    rest = displ
    while len(rest) > 1:
        if len(shape) == MAX_GRID_DIMS:
            return None
        steps = np.diff(rest)
        stride = int(steps[0])
        uneven = steps != stride
        first_break = int(uneven.argmax())
        inner = len(rest) if not uneven[first_break] else first_break + 1
        if len(rest) % inner:
            return None
        if inner < len(rest):
            rows = rest.reshape(-1, inner)
            pattern = rows[0] - rows[0, 0]
            if not np.array_equal(rows - rows[:, :1], np.broadcast_to(pattern, rows.shape)):
                return None
            rest = rows[:, 0]
        else:
            rest = rest[:1]
        shape.insert(0, inner)
        strides.insert(0, stride)
    return shape, strides


@attrs.frozen(eq=False)
class Plan:
    """How one element of a layout is copied: its byte blocks and their regular structure."""

    #: Bytes of data per element and the distance between elements.
    size: int
    extent: int
    #: Byte offset of the data when any count of elements is contiguous (``true_lb``), else None.
    contiguous_at: int | None
    #: Merged byte blocks of one element, in typemap (= packed) order.
    block_displ: IntArray
    block_len: IntArray
    #: Packed position of each block within its element.
    block_pos: IntArray
    #: When all blocks have one length and lie on a grid: its shape and strides, C order.
    grid_shape: tuple[int, ...] | None
    grid_strides: tuple[int, ...] | None

    @classmethod
    def compile(cls, description: Description) -> Plan:
        """Compile ``description`` (prefer ``description.plan``, which caches this)."""
        displ, length = description.blocks
        position = np.cumsum(length) - length
        position.flags.writeable = False
        contiguous_at = description.true_lb if description.is_contiguous else None
        grid = None
        if len(length) and not (length != length[0]).any():
            grid = _grid_of(displ)
        return cls(
            size=description.size,
            extent=description.extent,
            contiguous_at=contiguous_at,
            block_displ=displ,
            block_len=length,
            block_pos=position,
            grid_shape=tuple(grid[0]) if grid else None,
            grid_strides=tuple(grid[1]) if grid else None,
        )

    @functools.cached_property
    def block_end(self) -> IntArray:
        """Packed position just past each block within its element."""
        return self.block_pos + self.block_len

    def copy_elements(
        self, buffer: U8, base: int, count: int, stream: U8, offset: int, *, pack: bool
    ) -> None:
        """Move ``count`` whole elements, the first at byte ``base`` of ``buffer``, to or from
        ``stream`` starting at its byte ``offset`` (irregular layouts; grids use :class:`Grid`)."""
        if count == 0 or self.size == 0:
            return
        starts = np.arange(count, dtype=np.int64)
        typed_offsets = ((base + starts * self.extent)[:, None] + self.block_displ).reshape(-1)
        packed_offsets = ((offset + starts * self.size)[:, None] + self.block_pos).reshape(-1)
        lengths = np.tile(self.block_len, count)
        if pack:
            _copy_blocks(buffer, typed_offsets, stream, packed_offsets, lengths)
        else:
            _copy_blocks(stream, packed_offsets, buffer, typed_offsets, lengths)

    def copy_within(
        self, buffer: U8, base: int, start: int, stop: int, *, stream: U8, offset: int, pack: bool
    ) -> None:
        """Move packed bytes ``[start, stop)`` of one element (at byte ``base`` of ``buffer``) to
        or from ``stream`` starting at its byte ``offset``."""
        if start >= stop:
            return
        first = int(self.block_end.searchsorted(start, side="right"))
        last = int(self.block_pos.searchsorted(stop, side="left"))  # one past
        # The first and last blocks may be cut; those between are whole.
        for block in {first, last - 1}:
            lo = max(start, int(self.block_pos[block]))
            hi = min(stop, int(self.block_end[block]))
            typed = base + int(self.block_displ[block]) + lo - int(self.block_pos[block])
            packed = offset + lo - start
            if pack:
                stream[packed : packed + hi - lo] = buffer[typed : typed + hi - lo]
            else:
                buffer[typed : typed + hi - lo] = stream[packed : packed + hi - lo]
        middle = slice(first + 1, last - 1)
        if middle.start >= middle.stop:
            return
        typed_offsets = base + self.block_displ[middle]
        packed_offsets = offset - start + self.block_pos[middle]
        lengths = self.block_len[middle]
        if pack:
            _copy_blocks(buffer, typed_offsets, stream, packed_offsets, lengths)
        else:
            _copy_blocks(stream, packed_offsets, buffer, typed_offsets, lengths)


@attrs.frozen
class Grid:
    """``count`` elements of a regular layout in one buffer, as one grid of equal blocks.

    The element index is the outermost dimension, so the packed stream is simply the blocks
    in C order, ``length`` bytes each: a byte range of it is a head and a tail cut from single
    blocks and, between them, at most two boxes per dimension, each one strided numpy copy
    between a slice of :attr:`view` and a reshaped slice of the stream.  Dimensions adjacent
    in memory are folded together first (into ``length`` when blocks touch), so a vector of
    vectors with matching strides is one flat strided copy.
    """

    #: Byte of block (0, ..., 0) in the buffer.
    base: int
    shape: tuple[int, ...]
    #: Byte strides of the dimensions in the buffer.
    typed: tuple[int, ...]
    #: Bytes of one block.
    length: int
    #: Blocks in one step of each dimension (the product of the inner dimensions' sizes).
    inner: tuple[int, ...]
    #: The whole grid in the buffer: ``shape`` (plus a last axis of copy units when a block
    #: is more than one unit), made once so that each copy only slices it.
    view: np.ndarray
    #: The copy unit and a block's shape in units (``()`` when a block is one unit).
    unit: np.dtype[Any]
    block_shape: tuple[int, ...]

    @classmethod
    def of(cls, plan: Plan, buffer: U8, origin: int, count: int) -> Grid | None:
        """The grid of ``count`` elements of ``plan`` at ``origin``, if the layout is regular."""
        if plan.grid_shape is None or plan.grid_strides is None or plan.size == 0:
            return None
        length = int(plan.block_len[0])
        shape = (count, *plan.grid_shape)
        packed = [length] * len(shape)
        for dim in range(len(shape) - 2, -1, -1):
            packed[dim] = packed[dim + 1] * shape[dim + 1]
        dims, typed, _, length = _simplify(shape, (plan.extent, *plan.grid_strides), packed, length)
        if not dims:  # everything folded into one block
            dims, typed = [1], [length]
        inner = [1] * len(dims)
        for dim in range(len(dims) - 2, -1, -1):
            inner[dim] = inner[dim + 1] * dims[dim + 1]
        base = origin + int(plan.block_displ[0])
        unit, units = _unit(length)
        return cls(
            base=base,
            shape=tuple(dims),
            typed=tuple(typed),
            length=length,
            inner=tuple(inner),
            view=_strided(buffer, base, dims, typed, length),
            unit=unit,
            block_shape=() if units == 1 else (units,),
        )

    def address(self, block: int) -> int:
        """Byte in the buffer where block number ``block`` (in packed order) starts."""
        address = self.base
        for dim in range(len(self.shape) - 1, -1, -1):
            block, index = divmod(block, self.shape[dim])
            address += index * self.typed[dim]
        return address

    def move(self, buffer: U8, position: int, stream: U8, *, pack: bool) -> None:
        """Move packed bytes ``[position, position + len(stream))`` to or from ``stream``."""
        length, nbytes = self.length, len(stream)
        block, cut = divmod(position, length)
        done = 0
        if cut:
            done = min(length - cut, nbytes)
            _copy_slice(buffer, self.address(block) + cut, stream, 0, done, pack=pack)
            block += 1
        whole = (nbytes - done) // length
        if whole:
            self._boxes((), block, block + whole, stream, done, pack=pack)
            done += whole * length
            block += whole
        if done < nbytes:
            _copy_slice(buffer, self.address(block), stream, done, nbytes - done, pack=pack)

    def _boxes(
        self, index: tuple[int, ...], first: int, stop: int, stream: U8, offset: int, *, pack: bool
    ) -> None:
        """Move whole blocks ``[first, stop)`` of the sub-grid ``view[index]`` (in packed order)
        to or from ``stream`` from byte ``offset``."""
        dim = len(index)
        inner = self.inner[dim]
        top, head = divmod(first, inner)
        end, tail = divmod(stop, inner)
        if top == end:
            self._boxes((*index, top), head, tail, stream, offset, pack=pack)
            return
        if head:
            self._boxes((*index, top), head, inner, stream, offset, pack=pack)
            offset += (inner - head) * self.length
            top += 1
        if end > top:
            key: tuple[int | slice, ...] = (*index, slice(top, end))
            user = self.view[key]
            nbytes = (end - top) * inner * self.length
            flat = stream[offset : offset + nbytes].view(self.unit).reshape(user.shape)
            if pack:
                np.copyto(flat, user)
            else:
                np.copyto(user, flat)
            offset += nbytes
        if tail:
            self._boxes((*index, end), 0, tail, stream, offset, pack=pack)


def _copy_slice(
    buffer: U8, address: int, stream: U8, offset: int, nbytes: int, *, pack: bool
) -> None:
    """Copy ``nbytes`` adjacent bytes between the buffer and the stream."""
    if pack:
        stream[offset : offset + nbytes] = buffer[address : address + nbytes]
    else:
        buffer[address : address + nbytes] = stream[offset : offset + nbytes]


def _flat_bytes(buffer: Any, what: str) -> memoryview:
    """``buffer`` as a flat, C-contiguous byte memoryview (no copy)."""
    try:
        view = buffer if isinstance(buffer, memoryview) else memoryview(buffer)
    except TypeError:
        raise TypeError(
            f"{what} must support the buffer protocol, got {type(buffer).__name__}"
        ) from None
    if view.ndim == 1 and view.format == "B":
        return view
    if not view.c_contiguous:
        raise ValueError(f"{what} must be C-contiguous memory, got a strided buffer")
    return view.cast("B")


class Convertor:
    """``count`` elements of a layout in a buffer, packed and unpacked at any byte position.

    Element ``i``'s displacement 0 is byte ``origin + i * extent`` of ``buffer`` (the flat byte
    view of the whole exported buffer); every byte of data must lie inside ``buffer``.
    """

    __slots__ = (
        "_array",
        "_bytes",
        "_contiguous_at",
        "_grid",
        "count",
        "description",
        "origin",
        "packed_size",
        "plan",
    )

    def __init__(
        self, description: Description, buffer: Any, origin: SupportsIndex, count: SupportsIndex
    ) -> None:
        if not isinstance(description, Description):
            raise TypeError(f"description must be a Description, got {type(description).__name__}")
        self.description = description
        self.origin = operator.index(origin)
        self.count = operator.index(count)
        if self.count < 0:
            raise ValueError(f"count must be >= 0, got {self.count}")
        self._bytes = _flat_bytes(buffer, "buffer")
        #: The buffer as a numpy byte array, for layouts that are not one piece.
        self._array: U8 | None = None
        self.plan = description.plan
        self.packed_size = self.count * description.size
        self._grid: Grid | None = None
        #: Buffer byte where the packed stream lies as it is, when it does.
        self._contiguous_at: int | None = None if self.packed_size else 0
        if self.packed_size:
            span = (self.count - 1) * description.extent
            low = self.origin + description.true_lb + min(0, span)
            high = self.origin + description.true_ub + max(0, span)
            if low < 0 or high > len(self._bytes):
                raise ValueError(
                    f"{self.count} element(s) at origin {self.origin} span bytes [{low}, {high}) "
                    f"but the buffer holds {len(self._bytes)} bytes"
                )
            single = self.count == 1 and len(self.plan.block_len) == 1
            if self.plan.contiguous_at is not None or single:
                # Data in one piece: also one element of a type with gaps around its data.
                self._contiguous_at = self.origin + description.true_lb
            else:
                self._array = np.frombuffer(self._bytes, dtype=np.uint8)
                self._grid = Grid.of(self.plan, self._array, self.origin, self.count)

    def __repr__(self) -> str:
        return (
            f"Convertor({self.description!r}, count={self.count}, origin={self.origin}, "
            f"buffer of {len(self._bytes)} bytes)"
        )

    def contiguous_view(self) -> memoryview | None:
        """The data's own bytes when they are one piece in the buffer (no copy), else None.

        That is when the layout is contiguous, and also for a single element whose data is one
        block (a resized type, say).
        """
        start = self._contiguous_at
        if start is None:
            return None
        return self._bytes[start : start + self.packed_size]

    def pack(self, position: SupportsIndex, out: Any) -> int:
        """Copy the packed stream from byte ``position`` into ``out``, as much as fits.

        Returns how many bytes were written (less than ``len(out)`` at the stream's end).
        """
        position = self._position(position)
        target = np.frombuffer(_flat_bytes(out, "out"), dtype=np.uint8)
        if not target.flags.writeable:
            raise ValueError("out is read-only: cannot pack into it")
        nbytes = min(len(target), self.packed_size - position)
        self._move(position, target[:nbytes], pack=True)
        return nbytes

    def unpack(self, position: SupportsIndex, data: Any) -> int:
        """Copy ``data`` into the buffer as the packed stream from byte ``position`` on.

        Copies as much as the stream holds from there; returns how many bytes were used.
        """
        position = self._position(position)
        if self._bytes.readonly:
            raise ValueError("the buffer is read-only: cannot unpack into it")
        source = np.frombuffer(_flat_bytes(data, "data"), dtype=np.uint8)
        nbytes = min(len(source), self.packed_size - position)
        self._move(position, source[:nbytes], pack=False)
        return nbytes

    def pack_all(self) -> memoryview:
        """The whole packed stream: the buffer's own bytes when contiguous, else a new copy."""
        view = self.contiguous_view()
        if view is not None:
            return view
        out = np.empty(self.packed_size, dtype=np.uint8)
        self._move(0, out, pack=True)
        return out.data

    def unpack_all(self, data: Any) -> int:
        """Unpack ``data`` from position 0; it may be shorter than the stream, never longer."""
        size = len(_flat_bytes(data, "data"))
        if size > self.packed_size:
            raise ValueError(
                f"data holds {size} bytes but {self.count} element(s) of this layout pack to "
                f"{self.packed_size}"
            )
        return self.unpack(0, data)

    def _position(self, position: SupportsIndex) -> int:
        position = operator.index(position)
        if not 0 <= position <= self.packed_size:
            raise ValueError(
                f"position {position} is outside the packed stream of {self.packed_size} bytes"
            )
        return position

    def _move(self, position: int, stream: U8, *, pack: bool) -> None:
        """Move packed bytes ``[position, position + len(stream))`` to or from ``stream``."""
        nbytes = len(stream)
        if nbytes == 0:
            return
        if self._contiguous_at is not None:
            start = self._contiguous_at + position
            if pack:
                stream[:] = self._bytes[start : start + nbytes]
            else:
                self._bytes[start : start + nbytes] = stream.data
            return
        plan, buffer = self.plan, self._array
        assert buffer is not None  # made in __init__ for every layout not in one piece
        if self._grid is not None:
            self._grid.move(buffer, position, stream, pack=pack)
            return
        size, extent = plan.size, plan.extent
        element, start = divmod(position, size)
        last, stop = divmod(position + nbytes, size)
        base = self.origin + element * extent
        if element == last:
            plan.copy_within(buffer, base, start, stop, stream=stream, offset=0, pack=pack)
            return
        done = 0
        if start:
            plan.copy_within(buffer, base, start, size, stream=stream, offset=0, pack=pack)
            done = size - start
            element += 1
            base += extent
        whole = last - element
        plan.copy_elements(buffer, base, whole, stream, done, pack=pack)
        if stop:
            done += whole * size
            plan.copy_within(
                buffer, base + whole * extent, 0, stop, stream=stream, offset=done, pack=pack
            )
