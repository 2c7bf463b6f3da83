"""Flattened typemaps: what a datatype is, as the convertor and the MPI layer need it.

A :class:`Description` is an MPI typemap with its nesting flattened away: the data of one
element, in typemap order, as *runs* of one :class:`~ompy.opal.datatype.basic.Basic` adjacent
in memory, plus the bounds MPI defines (``lb``/``ub``, the true bounds of the data) and the
size.  Runs are numpy arrays, so a vector of a million doubles costs three arrays, not a
million objects, and every constructor works on whole arrays at once.

Displacements, strides and bounds are in bytes.  The bounds follow the MPI standard's
definition with *sticky* markers: a type made by :meth:`Description.resized` carries explicit
lower and upper bound markers, and a type built from parts takes its lower bound from the parts'
explicit markers when any part has one (otherwise from all of the parts' entries), and likewise
for the upper bound.  Blocks of length zero contribute nothing, not even bounds.  Without an
explicit upper bound, the standard's *epsilon* applies to every constructed type: the extent is
rounded up to a multiple of the strictest alignment among the basics it holds, as a C compiler
pads a struct, so ``count`` elements lie where an array of the C type would (Open MPI 5 does the
same: a struct of a double and a char, or an hvector of two doubles 12 bytes apart, has extent
16, resp. 24).

Descriptions are immutable (their arrays are read-only) and compared by identity; what is
derived from one (its merged byte blocks, the convertor's compiled plan) is computed once and
cached on it.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, SupportsIndex

import attrs
import numpy as np
import numpy.typing as npt

from ompy.opal.datatype.basic import Basic

if TYPE_CHECKING:
    from ompy.opal.datatype.convertor import Plan

IntArray = npt.NDArray[np.int64]


def _read_only(value: Any, dtype: type[np.generic]) -> Any:
    """A read-only 1-D copy of ``value`` as ``dtype``: a Description's arrays never change.

    An array that is already read-only, 1-D and of ``dtype`` (what the constructors hand over)
    is taken as it is.
    """
    if (
        isinstance(value, np.ndarray)
        and value.dtype == dtype
        and value.ndim == 1
        and not value.flags.writeable
    ):
        return value
    array = np.array(value, dtype=dtype, copy=True).reshape(-1)
    array.flags.writeable = False
    return array


def _int16_array(value: Any) -> npt.NDArray[np.int16]:
    return _read_only(value, np.int16)


def _int64_array(value: Any) -> IntArray:
    return _read_only(value, np.int64)


def _basics_tuple(value: Iterable[Basic]) -> tuple[Basic, ...]:
    return tuple(value)


def _ints(values: Iterable[SupportsIndex] | npt.ArrayLike, what: str) -> IntArray:
    """A sequence of integers as an int64 array, refusing floats and anything not 1-D."""
    array = np.asarray(values)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1:
        raise ValueError(f"{what} must be a flat sequence of integers, got shape {array.shape}")
    if not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{what} must be integers, got {array.dtype} values")
    return array.astype(np.int64, copy=False)


def _index(value: SupportsIndex, what: str) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}") from None


def _count(value: SupportsIndex, what: str) -> int:
    number = _index(value, what)
    if number < 0:
        raise ValueError(f"{what} must be >= 0, got {number}")
    return number


def merge_runs(
    basic: npt.NDArray[np.int16], displ: IntArray, count: IntArray, sizes: IntArray
) -> tuple[npt.NDArray[np.int16], IntArray, IntArray]:
    """Join each run to the previous one when it has the same basic and starts where it ends.

    ``sizes[i]`` is the byte size of basic ``i``.  Typemap order is kept: only neighbours in
    that order merge.
    """
    if len(displ) < 2:
        return basic, displ, count
    end = displ + count * sizes[basic]
    joins = (basic[1:] == basic[:-1]) & (end[:-1] == displ[1:])
    if not joins.any():
        return basic, displ, count
    starts = np.flatnonzero(np.concatenate(([True], ~joins)))
    return basic[starts], displ[starts], np.add.reduceat(count, starts)


def merge_blocks(displ: IntArray, length: IntArray) -> tuple[IntArray, IntArray]:
    """Join byte blocks that follow one another in memory and in order."""
    if len(displ) < 2:
        return displ, length
    joins = displ[:-1] + length[:-1] == displ[1:]
    if not joins.any():
        return displ, length
    starts = np.flatnonzero(np.concatenate(([True], ~joins)))
    return displ[starts], np.add.reduceat(length, starts)


def _intervals_overlap(displ: IntArray, length: IntArray) -> bool:
    """Whether byte intervals ``[displ, displ + length)`` (lengths > 0) share a byte."""
    if len(displ) < 2:
        return False
    order = np.argsort(displ, kind="stable")
    starts = displ[order]
    ends = np.maximum.accumulate(starts + length[order])
    return bool((starts[1:] < ends[:-1]).any())


@attrs.frozen(eq=False, repr=False)
class Description:
    """One element's flattened typemap: runs of basics plus MPI's bounds, all in bytes."""

    #: The distinct basics the runs use, in order of first use.
    basics: tuple[Basic, ...] = attrs.field(converter=_basics_tuple)
    #: Per run: index into :attr:`basics` (int16).
    run_basic: npt.NDArray[np.int16] = attrs.field(converter=_int16_array)
    #: Per run: byte displacement of its first element (int64).
    run_displ: IntArray = attrs.field(converter=_int64_array)
    #: Per run: how many elements of its basic lie adjacent from there (int64, >= 1).
    run_count: IntArray = attrs.field(converter=_int64_array)
    lb: int
    ub: int
    true_lb: int
    true_ub: int
    #: Bytes of data in one element (what it packs to).
    size: int
    #: Whether ``lb`` comes from an explicit marker (:meth:`resized`) that constructors keep.
    explicit_lb: bool = False
    #: Whether ``ub`` comes from an explicit marker.
    explicit_ub: bool = False

    def __attrs_post_init__(self) -> None:
        runs = len(self.run_displ)
        if len(self.run_basic) != runs or len(self.run_count) != runs:
            raise ValueError(
                "run_basic, run_displ and run_count must have one entry per run, got "
                f"{len(self.run_basic)}, {runs} and {len(self.run_count)}"
            )
        if runs and (self.run_basic.min() < 0 or self.run_basic.max() >= len(self.basics)):
            raise ValueError(f"run_basic indexes outside basics (there are {len(self.basics)})")
        if runs and self.run_count.min() < 1:
            raise ValueError("every run must hold at least one element")
        if len(self.basics) == 1:
            held = int(self.run_count.sum()) * self.basics[0].size
        else:
            held = int(self.run_bytes.sum())
        if held != self.size:
            raise ValueError(f"size {self.size} is not the {held} bytes the runs hold")

    # -- derived values -----------------------------------------------------------------------

    @property
    def extent(self) -> int:
        """``ub - lb``: how far apart consecutive elements of this type lie."""
        return self.ub - self.lb

    @property
    def true_extent(self) -> int:
        """``true_ub - true_lb``: the span of the data itself."""
        return self.true_ub - self.true_lb

    @functools.cached_property
    def _sizes(self) -> IntArray:
        """Byte size of each of :attr:`basics`."""
        return np.array([basic.size for basic in self.basics], dtype=np.int64)

    @functools.cached_property
    def run_bytes(self) -> IntArray:
        """Per run: its length in bytes."""
        if len(self.basics) == 1:
            lengths = self.run_count * self.basics[0].size
        else:
            lengths = self.run_count * self._sizes[self.run_basic]
        lengths.flags.writeable = False
        return lengths

    @functools.cached_property
    def blocks(self) -> tuple[IntArray, IntArray]:
        """The data of one element as contiguous byte blocks ``(displacements, lengths)``.

        Runs of different basics that follow one another in memory and in typemap order are one
        block: copying bytes does not care about types.
        """
        if len(self.basics) == 1:
            # Runs of one basic are already merged wherever they touch.
            return self.run_displ, self.run_bytes
        displ, length = merge_blocks(self.run_displ, self.run_bytes)
        displ.flags.writeable = False
        length.flags.writeable = False
        return displ, length

    @functools.cached_property
    def plan(self) -> Plan:
        """The convertor's compiled copy plan for this layout (built on first use)."""
        from ompy.opal.datatype.convertor import Plan

        return Plan.compile(self)

    @functools.cached_property
    def is_contiguous(self) -> bool:
        """Whether ``count`` elements are ``count * size`` adjacent bytes from ``true_lb``.

        True when one element's data is a single block in typemap order and the next element
        starts right where it ends (``extent == size``); an element without data is trivially
        contiguous.
        """
        if self.size == 0:
            return True
        displ, _ = self.blocks
        return len(displ) == 1 and self.extent == self.size

    @property
    def single_basic(self) -> Basic | None:
        """The one basic all the data is made of, or None (mixed, or no data at all)."""
        return self.basics[0] if len(self.basics) == 1 else None

    @functools.cached_property
    def element_count(self) -> int:
        """How many basic elements one element of this type holds."""
        return int(self.run_count.sum())

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def of_basic(cls, basic: Basic) -> Description:
        """The typemap of a predefined type: one element of ``basic`` at displacement 0."""
        return cls(
            basics=(basic,),
            run_basic=[0],
            run_displ=[0],
            run_count=[1],
            lb=0,
            ub=basic.size,
            true_lb=0,
            true_ub=basic.size,
            size=basic.size,
        )

    @classmethod
    def empty(cls) -> Description:
        """The typemap without entries (what a count of zero builds)."""
        return cls((), [], [], [], 0, 0, 0, 0, 0)

    def contiguous(self, count: SupportsIndex) -> Description:
        """``count`` elements one extent after another."""
        count = _count(count, "count")
        return self._blocks(np.array([count], dtype=np.int64), np.zeros(1, dtype=np.int64))

    def hvector(
        self, count: SupportsIndex, blocklength: SupportsIndex, stride: SupportsIndex
    ) -> Description:
        """``count`` blocks of ``blocklength`` elements, block starts ``stride`` bytes apart."""
        count = _count(count, "count")
        blocklength = _count(blocklength, "blocklength")
        stride = _index(stride, "stride")
        if len(self.run_displ) == 1 and self.extent == self.size:
            return self._vector_of_run(count, blocklength, stride)
        starts = np.arange(count, dtype=np.int64) * stride
        lengths = np.full(count, blocklength, dtype=np.int64)
        return self._blocks(lengths, starts)

    def hindexed(
        self,
        blocklengths: Sequence[SupportsIndex] | npt.ArrayLike,
        displacements: Sequence[SupportsIndex] | npt.ArrayLike,
    ) -> Description:
        """Blocks of ``blocklengths[i]`` elements starting at byte ``displacements[i]``."""
        lengths = _ints(blocklengths, "blocklengths")
        displs = _ints(displacements, "displacements")
        if len(lengths) != len(displs):
            raise ValueError(
                f"blocklengths and displacements differ in length ({len(lengths)} and "
                f"{len(displs)})"
            )
        if len(lengths) and lengths.min() < 0:
            raise ValueError(f"blocklengths must be >= 0, got {int(lengths.min())}")
        return self._blocks(lengths, displs)

    def hindexed_block(
        self,
        blocklength: SupportsIndex,
        displacements: Sequence[SupportsIndex] | npt.ArrayLike,
    ) -> Description:
        """Blocks of ``blocklength`` elements each, starting at the given byte displacements."""
        blocklength = _count(blocklength, "blocklength")
        displs = _ints(displacements, "displacements")
        lengths = np.full(len(displs), blocklength, dtype=np.int64)
        return self._blocks(lengths, displs)

    @staticmethod
    def struct(
        blocklengths: Sequence[SupportsIndex] | npt.ArrayLike,
        displacements: Sequence[SupportsIndex] | npt.ArrayLike,
        descriptions: Sequence[Description],
    ) -> Description:
        """Block ``i``: ``blocklengths[i]`` of ``descriptions[i]`` at byte ``displacements[i]``."""
        lengths = _ints(blocklengths, "blocklengths")
        displs = _ints(displacements, "displacements")
        descriptions = list(descriptions)
        if not len(lengths) == len(displs) == len(descriptions):
            raise ValueError(
                "blocklengths, displacements and descriptions differ in length "
                f"({len(lengths)}, {len(displs)} and {len(descriptions)})"
            )
        for position, description in enumerate(descriptions):
            if not isinstance(description, Description):
                raise TypeError(
                    f"descriptions[{position}] must be a Description, got "
                    f"{type(description).__name__}"
                )
        if len(lengths) and lengths.min() < 0:
            raise ValueError(f"blocklengths must be >= 0, got {int(lengths.min())}")
        parts = [
            (part, part._block_offsets(lengths[i : i + 1], displs[i : i + 1]))
            for i, part in enumerate(descriptions)
        ]
        return Description._build(parts)

    @property
    def alignment(self) -> int:
        """The strictest alignment among this element's basics (1 when it holds none)."""
        return max((basic.dtype.alignment for basic in self.basics), default=1)

    def resized(self, lb: SupportsIndex, extent: SupportsIndex) -> Description:
        """The same data with explicit bounds ``lb`` and ``lb + extent``."""
        lb = _index(lb, "lb")
        extent = _index(extent, "extent")
        return attrs.evolve(self, lb=lb, ub=lb + extent, explicit_lb=True, explicit_ub=True)

    def _vector_of_run(self, count: int, blocklength: int, stride: int) -> Description:
        """:meth:`hvector` of an element that is one run with nothing between elements.

        Each block is one run, and consecutive blocks touch exactly when the stride is a
        block's length, so the runs are written directly: a vector of a million doubles costs
        three passes over arrays of its blocks.
        """
        if count == 0 or blocklength == 0:
            return Description._build([])
        first = int(self.run_displ[0])
        elements = blocklength * int(self.run_count[0])
        reach = (count - 1) * stride
        if stride == blocklength * self.extent:
            start = np.array([first], dtype=np.int64)
            counts = np.array([count * elements], dtype=np.int64)
        else:
            start = np.arange(count, dtype=np.int64) * stride
            start += first
            counts = np.full(count, elements, dtype=np.int64)
        low = min(0, reach)
        high = max(0, reach) + (blocklength - 1) * self.extent
        bounds = Description._bounds([(self, low, high, count * blocklength)])
        basic = np.zeros(len(start), dtype=np.int16)
        for array in (start, counts, basic):
            array.flags.writeable = False
        return Description(self.basics, basic, start, counts, **bounds)

    def _blocks(self, lengths: IntArray, displs: IntArray) -> Description:
        """Blocks of ``lengths[i]`` copies of this element at byte ``displs[i]``.

        When this element is one run with nothing between elements (a basic, a contiguous
        type), each block is one run and the copies need not be enumerated.
        """
        if len(self.run_displ) != 1 or self.extent != self.size:
            return Description._build([(self, self._block_offsets(lengths, displs))])
        keep = lengths > 0
        if not keep.all():
            lengths, displs = lengths[keep], displs[keep]
        if len(lengths) == 0:
            return Description._build([])
        low = int(displs.min())
        high = int((displs + (lengths - 1) * self.extent).max())
        run_size = self.basics[0].size
        start = displs + int(self.run_displ[0])
        counts = lengths * int(self.run_count[0])
        merged, nbytes = merge_blocks(start, counts * run_size)
        if merged is not start:
            start, counts = merged, nbytes // run_size
        bounds = Description._bounds([(self, low, high, int(lengths.sum()))])
        for array in (start, counts):
            array.flags.writeable = False
        basic = np.zeros(len(start), dtype=np.int16)
        basic.flags.writeable = False
        return Description(self.basics, basic, start, counts, **bounds)

    @staticmethod
    def _bounds(parts: Iterable[tuple[Description, int, int, int]]) -> dict[str, Any]:
        """Bounds and size of a typemap made of copies of parts.

        ``parts[k] = (description, lowest copy displacement, highest, number of copies)``;
        parts without copies contribute nothing.  MPI's rules for explicit markers apply (see
        the module docstring).
        """
        explicit_lbs: list[int] = []
        explicit_ubs: list[int] = []
        lbs: list[int] = []
        ubs: list[int] = []
        true_lbs: list[int] = []
        true_ubs: list[int] = []
        size = 0
        alignment = 1
        for part, low, high, copies in parts:
            if copies == 0:
                continue
            if part.explicit_lb:
                explicit_lbs.append(low + part.lb)
            if part.explicit_ub:
                explicit_ubs.append(high + part.ub)
            if part.size > 0 or part.explicit_lb or part.explicit_ub:
                lbs.append(low + part.lb)
                ubs.append(high + part.ub)
            if part.size > 0:
                true_lbs.append(low + part.true_lb)
                true_ubs.append(high + part.true_ub)
                size += part.size * copies
                alignment = max(alignment, part.alignment)
        lb = min(explicit_lbs) if explicit_lbs else min(lbs, default=0)
        if explicit_ubs:
            ub = max(explicit_ubs)
        else:  # MPI's epsilon: the extent rounded up to the strictest alignment, as C pads
            ub = max(ubs, default=0)
            ub += -(ub - lb) % alignment
        return {
            "lb": lb,
            "ub": ub,
            "true_lb": min(true_lbs, default=0),
            "true_ub": max(true_ubs, default=0),
            "size": size,
            "explicit_lb": bool(explicit_lbs),
            "explicit_ub": bool(explicit_ubs),
        }

    def _block_offsets(self, lengths: IntArray, displs: IntArray) -> IntArray:
        """Displacement of every copy of this element: block ``i``'s ``j``-th at
        ``displs[i] + j * extent``, in typemap order."""
        total = int(lengths.sum()) if len(lengths) else 0
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        firsts = np.cumsum(lengths) - lengths
        within = np.arange(total, dtype=np.int64) - np.repeat(firsts, lengths)
        return np.repeat(displs, lengths) + within * self.extent

    @staticmethod
    def _build(parts: Sequence[tuple[Description, IntArray]]) -> Description:
        """The typemap of copies of parts: ``parts[k] = (description, copy displacements)``.

        Runs are the parts' runs shifted by each copy's displacement, in order, merged where
        adjacent; bounds follow MPI's rules for markers (see the module docstring).
        """
        basics: list[Basic] = []
        run_basic: list[npt.NDArray[np.int16]] = []
        run_displ: list[IntArray] = []
        run_count: list[IntArray] = []
        spans = []
        for part, offsets in parts:
            if len(offsets) == 0:
                continue
            spans.append((part, int(offsets.min()), int(offsets.max()), len(offsets)))
            if part.size == 0:
                continue
            remap = []
            for basic in part.basics:
                if basic not in basics:
                    basics.append(basic)
                remap.append(basics.index(basic))
            run_basic.append(np.tile(np.array(remap, dtype=np.int16)[part.run_basic], len(offsets)))
            run_displ.append((offsets[:, None] + part.run_displ[None, :]).reshape(-1))
            run_count.append(np.tile(part.run_count, len(offsets)))
        if run_displ:
            sizes = np.array([basic.size for basic in basics], dtype=np.int64)
            merged = merge_runs(
                np.concatenate(run_basic),
                np.concatenate(run_displ),
                np.concatenate(run_count),
                sizes,
            )
        else:
            merged = (np.zeros(0, np.int16), np.zeros(0, np.int64), np.zeros(0, np.int64))
        return Description(
            tuple(basics), merged[0], merged[1], merged[2], **Description._bounds(spans)
        )

    # -- queries ------------------------------------------------------------------------------

    def elements(self, nbytes: SupportsIndex) -> int | None:
        """How many basic elements the first ``nbytes`` of the packed stream hold.

        The stream is consecutive elements of this type packed; None when ``nbytes`` ends
        inside a basic element (what ``MPI_Get_elements`` reports as undefined).
        """
        nbytes = _count(nbytes, "nbytes")
        if self.size == 0:
            return 0 if nbytes == 0 else None
        whole, rest = divmod(nbytes, self.size)
        counted = whole * self.element_count
        if rest == 0:
            return counted
        ends = np.cumsum(self.run_bytes)
        run = int(np.searchsorted(ends, rest, side="right"))
        before = int(ends[run - 1]) if run else 0
        basic_size = self.basics[int(self.run_basic[run])].size
        inside, partial = divmod(rest - before, basic_size)
        if partial:
            return None
        return counted + int(self.run_count[:run].sum()) + inside

    def overlaps(self, count: SupportsIndex = 1) -> bool:
        """Whether some byte of data in ``count`` consecutive elements is covered twice.

        Such a layout may be sent but never received into.  Blocks laid out in order (a vector,
        a subarray) answer in one pass; otherwise the blocks of the elements that can meet are
        sorted.
        """
        count = _count(count, "count")
        if self.size == 0 or count == 0:
            return False
        if self._overlaps_within:
            return True
        step = abs(self.extent)
        if count == 1 or step >= self.true_extent:
            return False
        if step == 0:
            return True
        # Element j can only meet element 0 if j * |extent| < true extent.
        copies = min(count, -(-self.true_extent // step))
        displ, length = self.blocks
        shifts = np.arange(copies, dtype=np.int64) * self.extent
        return _intervals_overlap(
            (shifts[:, None] + displ[None, :]).reshape(-1), np.tile(length, copies)
        )

    @functools.cached_property
    def _overlaps_within(self) -> bool:
        """Whether one element's data covers some byte twice."""
        displ, length = self.blocks
        if len(displ) < 2:
            return False
        ends = displ + length
        if (ends[:-1] <= displ[1:]).all() or (ends[1:] <= displ[:-1]).all():
            return False  # blocks in increasing (or decreasing) order, apart
        return _intervals_overlap(displ, length)

    def signature_arrays(self, count: SupportsIndex = 1) -> tuple[npt.NDArray[np.int16], IntArray]:
        """:meth:`signature` as arrays: (index into :attr:`basics`, element count) per run."""
        count = _count(count, "count")
        if count == 0 or self.size == 0:
            return np.zeros(0, np.int16), np.zeros(0, np.int64)
        basic = np.asarray(self.run_basic)
        counts = np.asarray(self.run_count)
        # Neighbouring runs of one basic are one signature entry whatever lies between them.
        changes = np.flatnonzero(np.concatenate(([True], basic[1:] != basic[:-1])))
        basic = basic[changes]
        counts = np.add.reduceat(counts, changes)
        if count == 1:
            return basic.copy(), counts
        if len(basic) == 1:
            return basic.copy(), counts * count
        basic = np.tile(basic, count)
        counts = np.tile(counts, count)
        if basic[0] == basic[-1]:
            # The last entry of each element merges with the first of the next.
            changes = np.flatnonzero(np.concatenate(([True], basic[1:] != basic[:-1])))
            basic = basic[changes]
            counts = np.add.reduceat(counts, changes)
        return basic, counts

    def signature(self, count: SupportsIndex = 1) -> list[tuple[Basic, int]]:
        """What ``count`` packed elements hold, in order: ``(basic, how many)``, merged."""
        basic, counts = self.signature_arrays(count)
        return [
            (self.basics[index], int(number))
            for index, number in zip(basic.tolist(), counts.tolist(), strict=True)
        ]

    def __repr__(self) -> str:
        kinds = ", ".join(basic.name for basic in self.basics)
        return (
            f"Description({len(self.run_displ)} runs of [{kinds}], size={self.size}, "
            f"lb={self.lb}, ub={self.ub}, true_lb={self.true_lb}, true_ub={self.true_ub})"
        )
