"""Property tests: nested descriptions against a brute-force typemap, the convertor against numpy.

The reference model is the MPI standard's typemap written out entry by entry: a list of
``(basic name, displacement)`` data entries plus explicit lower/upper bound markers, built by
constructors that copy entries one by one.  Bounds, sizes, element counts, overlap and
signatures are computed from it directly, and the packed stream of ``count`` elements is the
buffer indexed with the byte positions of every entry in order.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ompy.opal.datatype import BASICS, Convertor, Description

NAMES = ("char", "short", "int", "double", "long double", "byte", "float _Complex")
MAX_ENTRIES = 600


@attrs.frozen
class Ref:
    """A typemap written out: data entries in order, and explicit bound markers."""

    entries: tuple[tuple[str, int], ...]
    lb_marks: tuple[int, ...] = ()
    ub_marks: tuple[int, ...] = ()
    #: The upper bound a constructor gave it (MPI's epsilon), when no marker sets one.
    end: int | None = None

    @property
    def lb(self) -> int:
        if self.lb_marks:
            return min(self.lb_marks)
        every = [d for _, d in self.entries] + list(self.ub_marks)
        return min(every, default=0)

    @property
    def ub(self) -> int:
        if self.ub_marks:
            return max(self.ub_marks)
        if self.end is not None:
            return self.end
        every = [d + BASICS[n].size for n, d in self.entries] + list(self.lb_marks)
        return max(every, default=0)

    @property
    def extent(self) -> int:
        return self.ub - self.lb

    @property
    def true_lb(self) -> int:
        return min((d for _, d in self.entries), default=0)

    @property
    def true_ub(self) -> int:
        return max((d + BASICS[n].size for n, d in self.entries), default=0)

    @property
    def size(self) -> int:
        return sum(BASICS[n].size for n, _ in self.entries)

    def shifted(self, offset: int) -> Ref:
        return Ref(
            tuple((n, d + offset) for n, d in self.entries),
            tuple(m + offset for m in self.lb_marks),
            tuple(m + offset for m in self.ub_marks),
            None if self.end is None else self.end + offset,
        )

    def byte_index(self, origin: int, count: int) -> np.ndarray:
        """Buffer byte of every packed byte of ``count`` elements, in stream order."""
        index = [
            origin + i * self.extent + d + k
            for i in range(count)
            for n, d in self.entries
            for k in range(BASICS[n].size)
        ]
        return np.array(index, dtype=np.int64)


def constructed(copies: Sequence[Ref]) -> Ref:
    """What a constructor makes of copies of elements: their entries and markers in order, and
    without an upper-bound marker MPI's epsilon: the highest upper bound among the copies that
    hold something, rounded up (from the lower bound) to the strictest alignment of the data."""
    made = Ref(
        tuple(e for p in copies for e in p.entries),
        tuple(m for p in copies for m in p.lb_marks),
        tuple(m for p in copies for m in p.ub_marks),
    )
    if made.ub_marks:
        return made
    high = max((p.ub for p in copies if p.entries or p.lb_marks), default=0)
    align = max((BASICS[n].dtype.alignment for n, _ in made.entries), default=1)
    return attrs.evolve(made, end=high + -(high - made.lb) % align)


def copies_of(ref: Ref, lengths: Sequence[int], displs: Sequence[int]) -> list[Ref]:
    return [
        ref.shifted(d + j * ref.extent)
        for b, d in zip(lengths, displs, strict=True)
        for j in range(b)
    ]


def ref_hindexed(ref: Ref, lengths: Sequence[int], displs: Sequence[int]) -> Ref:
    return constructed(copies_of(ref, lengths, displs))


Pair = tuple[Description, Ref]


def basics() -> st.SearchStrategy[Pair]:
    return st.sampled_from(NAMES).map(lambda n: (Description.of_basic(BASICS[n]), Ref(((n, 0),))))


def extend(children: st.SearchStrategy[Pair]) -> st.SearchStrategy[Pair]:
    small = st.integers(0, 3)
    displ = st.integers(-48, 48)

    def contiguous(pair: Pair, count: int) -> Pair:
        d, r = pair
        return d.contiguous(count), ref_hindexed(r, [count], [0])

    def hvector(pair: Pair, count: int, blocklength: int, stride: int) -> Pair:
        d, r = pair
        return d.hvector(count, blocklength, stride), ref_hindexed(
            r, [blocklength] * count, [i * stride for i in range(count)]
        )

    def hindexed(pair: Pair, blocks: list[tuple[int, int]]) -> Pair:
        d, r = pair
        lengths = [b for b, _ in blocks]
        displs = [x for _, x in blocks]
        return d.hindexed(lengths, displs), ref_hindexed(r, lengths, displs)

    def hindexed_block(pair: Pair, blocklength: int, displs: list[int]) -> Pair:
        d, r = pair
        return d.hindexed_block(blocklength, displs), ref_hindexed(
            r, [blocklength] * len(displs), displs
        )

    def struct(parts: list[tuple[Pair, int, int]]) -> Pair:
        descriptions = [p[0][0] for p in parts]
        lengths = [p[1] for p in parts]
        displs = [p[2] for p in parts]
        ref = constructed([c for p in parts for c in copies_of(p[0][1], [p[1]], [p[2]])])
        return Description.struct(lengths, displs, descriptions), ref

    def resized(pair: Pair, lb: int, extent: int) -> Pair:
        d, r = pair
        return d.resized(lb, extent), Ref(r.entries, (lb,), (lb + extent,))

    return st.one_of(
        st.builds(contiguous, children, st.integers(0, 4)),
        st.builds(hvector, children, small, small, displ),
        st.builds(hindexed, children, st.lists(st.tuples(small, displ), max_size=4)),
        st.builds(hindexed_block, children, small, st.lists(displ, max_size=4)),
        st.builds(struct, st.lists(st.tuples(children, small, displ), min_size=1, max_size=3)),
        st.builds(resized, children, st.integers(-16, 16), st.integers(-8, 48)),
    )


def bounded(pair: Pair) -> bool:
    return len(pair[1].entries) <= MAX_ENTRIES


descriptions = st.recursive(basics(), extend, max_leaves=6).filter(bounded)

SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


def span(ref: Ref, count: int) -> tuple[int, int]:
    """The byte range ``count`` elements' data occupy relative to the origin."""
    if ref.size == 0 or count == 0:
        return 0, 0
    reach = (count - 1) * ref.extent
    return ref.true_lb + min(0, reach), ref.true_ub + max(0, reach)


def buffer_for(ref: Ref, count: int, margin: int = 5) -> tuple[np.ndarray, int]:
    """A patterned buffer holding ``count`` elements with ``margin`` spare bytes each side."""
    low, high = span(ref, count)
    origin = margin - low
    data = (np.arange(high - low + 2 * margin, dtype=np.int64) * 7 % 251 + 1).astype(np.uint8)
    return data, origin


@SETTINGS
@given(descriptions)
def test_bounds_and_size_match_the_typemap(pair: Pair) -> None:
    description, ref = pair
    assert description.size == ref.size
    assert (description.lb, description.ub) == (ref.lb, ref.ub)
    assert description.extent == ref.extent
    assert (description.true_lb, description.true_ub) == (ref.true_lb, ref.true_ub)
    assert description.true_extent == ref.true_ub - ref.true_lb
    used = {n for n, _ in ref.entries}
    assert {b.name for b in description.basics} == used
    assert description.single_basic == (BASICS[used.pop()] if len(used) == 1 else None)
    assert description.element_count == len(ref.entries)


@SETTINGS
@given(descriptions, st.integers(0, 3))
def test_signature_merges_the_typemap(pair: Pair, count: int) -> None:
    description, ref = pair
    expected: list[tuple[str, int]] = []
    for _ in range(count):
        for name, _ in ref.entries:
            if expected and expected[-1][0] == name:
                expected[-1] = (name, expected[-1][1] + 1)
            else:
                expected.append((name, 1))
    assert [(b.name, n) for b, n in description.signature(count)] == expected


@SETTINGS
@given(descriptions, st.integers(1, 3), st.data())
def test_elements_counts_whole_entries(pair: Pair, count: int, data: st.DataObject) -> None:
    description, ref = pair
    sizes = [BASICS[n].size for n, _ in ref.entries] * count
    ends = np.cumsum([0, *sizes])
    nbytes = data.draw(st.integers(0, int(ends[-1])))
    expected = int(np.searchsorted(ends, nbytes, side="right")) - 1
    assert description.elements(nbytes) == (expected if nbytes in ends else None)


@SETTINGS
@given(descriptions, st.integers(1, 4))
def test_overlaps_and_contiguity_match_the_bytes(pair: Pair, count: int) -> None:
    description, ref = pair
    index = ref.byte_index(0, count)
    assert description.overlaps(count) == (len(np.unique(index)) < len(index))
    if ref.size:
        three = ref.byte_index(0, 3)
        start = ref.true_lb
        expected = bool(np.array_equal(three, np.arange(start, start + 3 * ref.size)))
        assert description.is_contiguous == expected


@SETTINGS
@given(descriptions, st.integers(0, 4), st.data())
def test_pack_matches_numpy_indexing(pair: Pair, count: int, data: st.DataObject) -> None:
    description, ref = pair
    buffer, origin = buffer_for(ref, count)
    expected = buffer[ref.byte_index(origin, count)].tobytes()
    convertor = Convertor(description, memoryview(buffer), origin, count)
    assert convertor.packed_size == len(expected)
    assert bytes(convertor.pack_all()) == expected
    # The same stream in fragments of random sizes, from a random position to the end.
    start = position = data.draw(st.integers(0, len(expected)))
    pieces = []
    while position < len(expected):
        room = data.draw(st.integers(1, len(expected) - position + 3))
        out = bytearray(room)
        written = convertor.pack(position, out)
        assert written == min(room, len(expected) - position)
        pieces.append(bytes(out[:written]))
        position += written
    assert b"".join(pieces) == expected[start:]
    assert convertor.pack(len(expected), bytearray(4)) == 0


@SETTINGS
@given(descriptions, st.integers(0, 4), st.data())
def test_unpack_matches_numpy_indexing(pair: Pair, count: int, data: st.DataObject) -> None:
    description, ref = pair
    index = ref.byte_index(0, count)
    assume(len(np.unique(index)) == len(index))
    template, origin = buffer_for(ref, count)
    stream = (np.arange(len(index), dtype=np.int64) * 13 % 253 + 2).astype(np.uint8)
    expected = np.zeros_like(template)
    expected[index + origin] = stream
    # Whole.
    target = np.zeros_like(template)
    convertor = Convertor(description, memoryview(target), origin, count)
    assert convertor.unpack_all(stream) == len(stream)
    assert np.array_equal(target, expected)
    # In fragments split at random positions (inside elements and inside basics).
    target[:] = 0
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    bounds = [0, *cuts, len(stream)]
    for lo, hi in itertools.pairwise(bounds):
        assert convertor.unpack(lo, stream[lo:hi]) == hi - lo
    assert np.array_equal(target, expected)


@SETTINGS
@given(descriptions, st.integers(1, 3))
def test_data_in_one_piece_is_handed_out_without_copy(pair: Pair, count: int) -> None:
    description, ref = pair
    buffer, origin = buffer_for(ref, count)
    convertor = Convertor(description, memoryview(buffer), origin, count)
    view = convertor.contiguous_view()
    index = ref.byte_index(origin, count)
    one_piece = len(index) == 0 or np.array_equal(index, np.arange(index[0], index[0] + len(index)))
    if description.is_contiguous:
        assert one_piece
    if not one_piece:
        assert view is None
        return
    assert view is not None
    assert bytes(view) == buffer[index].tobytes()
    if len(view):
        # The same memory, not a copy: a write through the view shows in the buffer.
        view[0] = (view[0] + 1) % 256
        assert buffer[index[0]] == view[0]
    packed = convertor.pack_all()
    assert packed.obj is view.obj


def test_convertor_refuses_data_outside_the_buffer() -> None:
    vector = Description.of_basic(BASICS["double"]).hvector(3, 1, 16)
    buffer = bytearray(40)
    Convertor(vector, memoryview(buffer), 0, 1)
    with pytest.raises(ValueError, match=r"span bytes \[0, 40\).*39 bytes"):
        Convertor(vector, memoryview(bytearray(39)), 0, 1)
    with pytest.raises(ValueError, match="span bytes"):
        Convertor(vector, memoryview(buffer), -1, 1)
    backwards = Description.of_basic(BASICS["int"]).hvector(3, 1, -8)
    with pytest.raises(ValueError, match=r"span bytes \[-16, 4\)"):
        Convertor(backwards, memoryview(buffer), 0, 1)
    Convertor(backwards, memoryview(buffer), 16, 1)
    with pytest.raises(ValueError, match="count must be >= 0"):
        Convertor(vector, memoryview(buffer), 0, -1)


def test_convertor_refuses_bad_positions_and_read_only_targets() -> None:
    vector = Description.of_basic(BASICS["int"]).hvector(4, 1, 8)
    convertor = Convertor(vector, memoryview(bytes(32)), 0, 1)
    with pytest.raises(ValueError, match="position 17 is outside the packed stream of 16"):
        convertor.pack(17, bytearray(4))
    with pytest.raises(ValueError, match="position -1"):
        convertor.pack(-1, bytearray(4))
    with pytest.raises(ValueError, match="buffer is read-only"):
        convertor.unpack(0, bytes(4))
    with pytest.raises(ValueError, match="out is read-only"):
        convertor.pack(0, bytes(4))
    writable = Convertor(vector, memoryview(bytearray(32)), 0, 1)
    with pytest.raises(ValueError, match="data holds 20 bytes but 1 element"):
        writable.unpack_all(bytes(20))
    with pytest.raises(TypeError, match="buffer protocol"):
        Convertor(vector, "not a buffer", 0, 1)


def test_typed_buffers_are_seen_as_their_bytes() -> None:
    array = np.arange(12, dtype=np.float64).reshape(3, 4)
    column = Description.of_basic(BASICS["double"]).hvector(3, 1, 32)
    convertor = Convertor(column, memoryview(array), 8, 1)
    assert np.frombuffer(convertor.pack_all(), np.float64).tolist() == [1.0, 5.0, 9.0]
    with pytest.raises(ValueError, match="C-contiguous"):
        Convertor(column, memoryview(array[:, ::2]), 0, 1)
