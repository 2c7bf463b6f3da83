"""The datatype constructors (``Create_contiguous`` ... ``Create_darray``, ``Create_resized``).

Each checks its arguments as MPI does (a negative count is ``ERR_COUNT``, a negative block
length or an index out of range ``ERR_ARG``, lists of different lengths a ``ValueError`` as in
mpi4py), builds the new typemap with the opal description's constructors (which take bytes:
element strides and displacements are scaled by the old type's extent here) and records the
call in the new datatype's envelope.  A new datatype is not committed; it has no name.

Subarrays and distributed arrays are built one dimension at a time, innermost first: the
elements a dimension keeps are a few runs of indices, so the dimension is an ``hindexed`` of the
type below it, resized to the dimension's full length so the next dimension strides over it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Self

import numpy as np

from ompy.opal.datatype.description import Description

from ..constants import ORDER_C, ORDER_FORTRAN
from ..errors import ERR_ARG, ERR_COUNT
from ..errors import Exception as MPIException
from .envelope import (
    COMBINER_CONTIGUOUS,
    COMBINER_DARRAY,
    COMBINER_HINDEXED,
    COMBINER_HINDEXED_BLOCK,
    COMBINER_HVECTOR,
    COMBINER_INDEXED,
    COMBINER_INDEXED_BLOCK,
    COMBINER_RESIZED,
    COMBINER_STRUCT,
    COMBINER_SUBARRAY,
    COMBINER_VECTOR,
    Envelope,
)
from .layout import Layout, freed_datatype_error, null_datatype_error

if TYPE_CHECKING:
    from .datatype import Datatype

# Distributions of a darray dimension (Open MPI 5's values).
DISTRIBUTE_BLOCK: Final = 0
DISTRIBUTE_CYCLIC: Final = 1
DISTRIBUTE_NONE: Final = 2
DISTRIBUTE_DFLT_DARG: Final = -1


class Constructors:
    """The ``Create_*`` methods of :class:`~ompy.ompi.datatype.datatype.Datatype`."""

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def layout(self) -> Layout: ...

        @classmethod
        def _of(cls, layout: Layout) -> Self: ...

    def _derive(self, description: Description, envelope: Envelope) -> Self:
        element = self.layout.element_layout() if description.size else None
        return type(self)._of(derived_layout(description, envelope, element))

    def _kept(self) -> Datatype:
        """A handle of this datatype's own for an envelope (the caller's may be freed)."""
        from .datatype import Datatype

        return Datatype._of(self.layout)

    def Create_contiguous(self, count: int) -> Self:
        """Create a contiguous datatype."""
        call = "Create_contiguous"
        count = _count(count, "count", call)
        description = self.layout.description.contiguous(count)
        return self._derive(
            description, Envelope(COMBINER_CONTIGUOUS, counts=(count,), datatypes=(self._kept(),))
        )

    # Each of vector, indexed and indexed_block comes in two forms that differ only in the
    # unit of their strides or displacements: extents of this datatype, or bytes (``h``).

    def Create_vector(self, count: int, blocklength: int, stride: int) -> Self:
        """Create a vector (strided) datatype."""
        call, extent = "Create_vector", self.layout.extent
        return self._vector(call, COMBINER_VECTOR, count, blocklength, stride, extent)

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Self:
        """Create a vector (strided) datatype with stride in bytes."""
        return self._vector("Create_hvector", COMBINER_HVECTOR, count, blocklength, stride, 1)

    def Create_indexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Self:
        """Create an indexed datatype."""
        call, extent = "Create_indexed", self.layout.extent
        return self._indexed(call, COMBINER_INDEXED, blocklengths, displacements, extent)

    def Create_hindexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> Self:
        """Create an indexed datatype (displacements in bytes)."""
        call = "Create_hindexed"
        return self._indexed(call, COMBINER_HINDEXED, blocklengths, displacements, 1)

    def Create_indexed_block(self, blocklength: int, displacements: Sequence[int]) -> Self:
        """Create an indexed datatype with constant-sized blocks."""
        call, extent = "Create_indexed_block", self.layout.extent
        return self._indexed_block(call, COMBINER_INDEXED_BLOCK, blocklength, displacements, extent)

    def Create_hindexed_block(self, blocklength: int, displacements: Sequence[int]) -> Self:
        """Create an indexed datatype with constant-sized blocks (displacements in bytes)."""
        call = "Create_hindexed_block"
        return self._indexed_block(call, COMBINER_HINDEXED_BLOCK, blocklength, displacements, 1)

    def _vector(  # noqa: PLR0917 (the constructor's arguments, plus what tells the forms apart)
        self, call: str, combiner: int, count: int, blocklength: int, stride: int, unit: int
    ) -> Self:
        count = _count(count, "count", call)
        blocklength = _length(blocklength, "blocklength", call)
        stride = _int(stride, "stride", call)
        description = self.layout.description.hvector(count, blocklength, stride * unit)
        counts = (count, blocklength, stride)
        return self._derive(
            description, Envelope(combiner, counts=counts, datatypes=(self._kept(),))
        )

    def _indexed(
        self,
        call: str,
        combiner: int,
        blocklengths: Sequence[int],
        displacements: Sequence[int],
        unit: int,
    ) -> Self:
        lengths = _lengths(blocklengths, "blocklengths", call)
        displs = _array(displacements, "displacements", call, len(lengths))
        description = self.layout.description.hindexed(lengths, displs * unit)
        counts = _counts(len(lengths), lengths, displs)
        return self._derive(
            description, Envelope(combiner, counts=counts, datatypes=(self._kept(),))
        )

    def _indexed_block(
        self, call: str, combiner: int, blocklength: int, displacements: Sequence[int], unit: int
    ) -> Self:
        blocklength = _length(blocklength, "blocklength", call)
        displs = _array(displacements, "displacements", call)
        description = self.layout.description.hindexed_block(blocklength, displs * unit)
        counts = _counts(len(displs), [blocklength], displs)
        return self._derive(
            description, Envelope(combiner, counts=counts, datatypes=(self._kept(),))
        )

    @classmethod
    def Create_struct(
        cls,
        blocklengths: Sequence[int],
        displacements: Sequence[int],
        datatypes: Sequence[Datatype],
    ) -> Self:
        """Create a general composite (struct) datatype (displacements in bytes)."""
        call = "Create_struct"
        lengths = _lengths(blocklengths, "blocklengths", call)
        displs = _array(displacements, "displacements", call, len(lengths))
        types = _datatypes(datatypes, call, len(lengths))
        layouts = [usable(datatype, call, f"datatypes[{i}]") for i, datatype in enumerate(types)]
        description = Description.struct(
            lengths, displs, [layout.description for layout in layouts]
        )
        from .datatype import Datatype

        envelope = Envelope(
            COMBINER_STRUCT,
            counts=_counts(len(lengths), lengths, displs),
            datatypes=tuple(Datatype._of(layout) for layout in layouts),
        )
        parts = [
            layout.element_layout()
            for layout, n in zip(layouts, lengths.tolist(), strict=True)
            if n and layout.size  # blocks without data say nothing of the elements
        ]
        element = parts[0] if parts and all(part is parts[0] for part in parts) else None
        return cls._of(derived_layout(description, envelope, element))

    def Create_subarray(
        self,
        sizes: Sequence[int],
        subsizes: Sequence[int],
        starts: Sequence[int],
        order: int = ORDER_C,
    ) -> Self:
        """Create a datatype for a subarray of a multidimensional array."""
        call = "Create_subarray"
        sizes_, subsizes_, starts_ = _per_dimension(
            call, sizes=sizes, subsizes=subsizes, starts=starts
        )
        ndims = len(sizes_)
        order = _order(order, call)
        for dim, (size, subsize, start) in enumerate(zip(sizes_, subsizes_, starts_, strict=True)):
            if size < 1:
                _arg_error(call, f"sizes[{dim}] must be at least 1, not {size}")
            if not 0 <= subsize <= size:
                _arg_error(call, f"subsizes[{dim}] = {subsize} must be in 0..sizes[{dim}] = {size}")
            if not 0 <= start <= size - subsize:
                _arg_error(
                    call,
                    f"starts[{dim}] = {start} must be in 0..{size - subsize} (sizes[{dim}] - "
                    f"subsizes[{dim}]) so the subarray lies inside the array",
                )
        ranges = [[(start, subsize)] for start, subsize in zip(starts_, subsizes_, strict=True)]
        description = _grid(self.layout, sizes_, ranges, order)
        envelope = Envelope(
            COMBINER_SUBARRAY,
            integers=(ndims, order),
            counts=(*sizes_, *subsizes_, *starts_),
            datatypes=(self._kept(),),
        )
        return self._derive(description, envelope)

    def Create_darray(  # noqa: PLR0917 (mpi4py's positional signature)
        self,
        size: int,
        rank: int,
        gsizes: Sequence[int],
        distribs: Sequence[int],
        dargs: Sequence[int],
        psizes: Sequence[int],
        order: int = ORDER_C,
    ) -> Self:
        """Create a datatype for a distributed array on Cartesian process grids."""
        call = "Create_darray"
        size = _int(size, "size", call)
        rank = _int(rank, "rank", call)
        gsizes_, distribs_, dargs_, psizes_ = _per_dimension(
            call, gsizes=gsizes, distribs=distribs, dargs=dargs, psizes=psizes
        )
        ndims = len(gsizes_)
        order = _order(order, call)
        if size < 1:
            _arg_error(call, f"size (processes in the grid) must be at least 1, not {size}")
        if not 0 <= rank < size:
            _arg_error(call, f"rank {rank} is not in 0..{size - 1}")
        if any(p < 1 for p in psizes_) or math.prod(psizes_) != size:
            _arg_error(call, f"psizes {psizes_} must be positive and multiply to size {size}")
        coords = _grid_coordinates(rank, psizes_)
        ranges = [
            _distributed(call, dim, gsize, distrib, darg, psize, coord)
            for dim, (gsize, distrib, darg, psize, coord) in enumerate(
                zip(gsizes_, distribs_, dargs_, psizes_, coords, strict=True)
            )
        ]
        description = _grid(self.layout, gsizes_, ranges, order)
        envelope = Envelope(
            COMBINER_DARRAY,
            integers=(size, rank, ndims, *distribs_, *dargs_, *psizes_, order),
            counts=tuple(gsizes_),
            datatypes=(self._kept(),),
        )
        return self._derive(description, envelope)

    def Create_resized(self, lb: int, extent: int) -> Self:
        """Create a datatype with a new lower bound and extent."""
        call = "Create_resized"
        lb = _int(lb, "lb", call)
        extent = _int(extent, "extent", call)
        description = self.layout.description.resized(lb, extent)
        envelope = Envelope(COMBINER_RESIZED, counts=(lb, extent), datatypes=(self._kept(),))
        return self._derive(description, envelope)

    Resized = Create_resized


# -- the new layout -----------------------------------------------------------------------------


_NUMPY_MAX_ITEMSIZE: Final = 2**31 - 1
_NO_VIEW: Final = np.dtype("V0")


def derived_layout(
    description: Description, envelope: Envelope, element: Layout | None = None
) -> Layout:
    """The layout of a new derived datatype: unnamed, uncommitted, viewed as its one basic
    kind when it has one (reductions use it) and as raw bytes otherwise."""
    basic = description.single_basic
    if basic is not None:
        dtype = basic.dtype
    else:
        # numpy's item sizes stop at 2**31 - 1 bytes; a struct of absolute addresses can span
        # far more, and such a layout has no useful numpy view of one element anyway.
        extent = int(description.ub) - int(description.lb)
        dtype = np.dtype(f"V{extent}") if 0 <= extent <= _NUMPY_MAX_ITEMSIZE else _NO_VIEW
    return Layout(name="", description=description, envelope=envelope, dtype=dtype, element=element)


def usable(datatype: Any, call: str, what: str = "the datatype") -> Layout:
    """The layout of a datatype argument; an ``ERR_TYPE`` error if it is null or freed."""
    from .datatype import Datatype

    if not isinstance(datatype, Datatype):
        raise TypeError(f"{call}: {what} must be a Datatype, not {type(datatype).__name__}")
    layout = datatype._layout
    if layout is None:
        raise null_datatype_error(f"{call} ({what})")
    if layout.freed:
        raise freed_datatype_error(layout, f"{call} ({what})")
    return layout


# -- subarrays and distributed arrays --------------------------------------------------------------


def _grid(
    old: Layout, sizes: list[int], ranges: list[list[tuple[int, int]]], order: int
) -> Description:
    """The elements of an array of ``sizes`` whose index in each dimension lies in that
    dimension's ``(start, length)`` runs; the extent is the whole array's."""
    dims = range(len(sizes) - 1, -1, -1) if order == ORDER_C else range(len(sizes))
    description = old.description
    stride = old.extent
    for dim in dims:
        runs = ranges[dim]
        description = description.hindexed(
            [length for _, length in runs], [start * stride for start, _ in runs]
        ).resized(0, sizes[dim] * stride)
        stride *= sizes[dim]
    if not sizes:
        description = description.resized(0, stride)
    return description


def _grid_coordinates(rank: int, psizes: list[int]) -> list[int]:
    """The coordinates of ``rank`` in the process grid (row-major, as MPI defines for darray)."""
    coords = [0] * len(psizes)
    for dim in range(len(psizes) - 1, -1, -1):
        rank, coords[dim] = divmod(rank, psizes[dim])
    return coords


def _distributed(  # noqa: PLR0917 (one dimension's darray arguments, in MPI's order)
    call: str, dim: int, gsize: int, distrib: int, darg: int, psize: int, coord: int
) -> list[tuple[int, int]]:
    """The ``(start, length)`` runs of indices that process coordinate ``coord`` owns."""
    if gsize < 1:
        _arg_error(call, f"gsizes[{dim}] must be at least 1, not {gsize}")
    if darg != DISTRIBUTE_DFLT_DARG and darg < 1:
        _arg_error(call, f"dargs[{dim}] must be positive or DISTRIBUTE_DFLT_DARG, not {darg}")
    if distrib == DISTRIBUTE_NONE:
        if psize != 1:
            _arg_error(call, f"dimension {dim} is not distributed, so psizes[{dim}] must be 1")
        return [(0, gsize)]
    if distrib == DISTRIBUTE_BLOCK:
        block = -(-gsize // psize) if darg == DISTRIBUTE_DFLT_DARG else darg
        if block * psize < gsize:
            _arg_error(
                call,
                f"dargs[{dim}] = {block} is too small: {psize} blocks of it do not cover "
                f"gsizes[{dim}] = {gsize}",
            )
        start = coord * block
        return [(start, min(block, gsize - start))] if start < gsize else []
    if distrib == DISTRIBUTE_CYCLIC:
        block = 1 if darg == DISTRIBUTE_DFLT_DARG else darg
        return [
            (start, min(block, gsize - start))
            for start in range(coord * block, gsize, psize * block)
        ]
    _arg_error(
        call,
        f"distribs[{dim}] = {distrib} is not DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC or "
        "DISTRIBUTE_NONE",
    )
    raise AssertionError  # unreachable: _arg_error raises


# -- arguments ----------------------------------------------------------------------------------


def _arg_error(call: str, message: str) -> None:
    raise MPIException(ERR_ARG, f"{call}: {message}")


def _int(value: Any, what: str, call: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{call}: {what} must be an int, not {type(value).__name__} {value!r}"
        ) from None


def _count(value: Any, what: str, call: str) -> int:
    count = _int(value, what, call)
    if count < 0:
        raise MPIException(ERR_COUNT, f"{call}: {what} must not be negative, got {count}")
    return count


def _length(value: Any, what: str, call: str) -> int:
    length = _int(value, what, call)
    if length < 0:
        _arg_error(call, f"{what} must not be negative, got {length}")
    return length


def _ints(values: Any, what: str, call: str, length: int | None = None) -> list[int]:
    if isinstance(values, int | np.integer):
        raise TypeError(f"{call}: {what} must be a sequence of ints, not a single int")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(
            f"{call}: {what} must be a sequence of ints, not {type(values).__name__}"
        ) from None
    numbers = [_int(item, f"{what}[{i}]", call) for i, item in enumerate(items)]
    if length is not None and len(numbers) != length:
        raise ValueError(
            f"{call}: incompatible array of length {len(numbers)} for {what}, expecting {length}"
        )
    return numbers


def _per_dimension(call: str, **arguments: Any) -> list[list[int]]:
    """The integer sequences a grid constructor takes, one item per dimension: the first gives
    the number of dimensions, every other must have as many items."""
    lists: list[list[int]] = []
    for what, values in arguments.items():
        lists.append(_ints(values, what, call, len(lists[0]) if lists else None))
    return lists


def _array(values: Any, what: str, call: str, length: int | None = None) -> np.ndarray:
    """A sequence of ints as an int64 array (block lists may hold millions: no Python loop)."""
    if isinstance(values, int | np.integer):
        raise TypeError(f"{call}: {what} must be a sequence of ints, not a single int")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        array = np.asarray(_ints(values, what, call))
    if array.dtype == object:  # Python ints beyond int64, or objects with __index__
        array = np.asarray(_ints(values, what, call), dtype=np.int64)
    if array.ndim != 1 and not (array.ndim == 0 and array.size == 0):
        raise TypeError(f"{call}: {what} must be a flat sequence of ints, got shape {array.shape}")
    if array.size and array.dtype.kind not in "iub":
        raise TypeError(f"{call}: {what} must be ints, not {array.dtype} values")
    array = array.astype(np.int64, copy=False).reshape(-1)
    if length is not None and len(array) != length:
        raise ValueError(
            f"{call}: incompatible array of length {len(array)} for {what}, expecting {length}"
        )
    return array


def _lengths(values: Any, what: str, call: str) -> np.ndarray:
    lengths = _array(values, what, call)
    negative = np.flatnonzero(lengths < 0)
    if len(negative):
        i = int(negative[0])
        _arg_error(call, f"{what}[{i}] must not be negative, got {int(lengths[i])}")
    return lengths


def _counts(count: int, *arrays: Any) -> np.ndarray:
    """The large-count list of an envelope: ``count`` then the arrays' values (one array)."""
    return np.concatenate([[count], *arrays]).astype(np.int64)


def _datatypes(values: Any, call: str, length: int) -> list[Datatype]:
    from .datatype import Datatype

    if isinstance(values, Datatype):
        raise TypeError(f"{call}: datatypes must be a sequence of Datatype, not one Datatype")
    types = list(values)
    if len(types) != length:
        raise ValueError(
            f"{call}: incompatible array of length {len(types)} for datatypes, expecting {length}"
        )
    return types


def _order(order: Any, call: str) -> int:
    order = _int(order, "order", call)
    if order not in (ORDER_C, ORDER_FORTRAN):
        _arg_error(call, f"order must be ORDER_C or ORDER_FORTRAN, not {order}")
    return order


__all__ = [
    "DISTRIBUTE_BLOCK",
    "DISTRIBUTE_CYCLIC",
    "DISTRIBUTE_DFLT_DARG",
    "DISTRIBUTE_NONE",
    "Constructors",
    "derived_layout",
    "usable",
]
