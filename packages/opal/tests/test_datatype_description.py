"""The flattened typemap: basics, constructors, bounds with markers, and the queries."""

from __future__ import annotations

import numpy as np
import pytest

from ompy.opal.datatype import BASICS, Basic, Description

DOUBLE = Description.of_basic(BASICS["double"])
INT = Description.of_basic(BASICS["int"])
CHAR = Description.of_basic(BASICS["char"])


def runs(description: Description) -> list[tuple[str, int, int]]:
    return [
        (description.basics[b].name, int(d), int(c))
        for b, d, c in zip(
            description.run_basic, description.run_displ, description.run_count, strict=True
        )
    ]


def test_basics_have_native_sizes_and_kinds() -> None:
    assert BASICS["double"].size == 8 and BASICS["double"].kind == "float"
    assert BASICS["double"].dtype == np.dtype(np.float64)
    assert BASICS["int"].size == np.dtype(np.intc).itemsize
    assert BASICS["unsigned long long"].kind == "unsigned"
    assert BASICS["byte"].kind == "byte" and BASICS["byte"].size == 1
    assert BASICS["double _Complex"].kind == "complex" and BASICS["double _Complex"].size == 16
    assert BASICS["long double"].dtype == np.dtype(np.longdouble)
    assert BASICS["float16"].size == 2
    for name, basic in BASICS.items():
        assert basic.name == name
        assert basic.size == basic.dtype.itemsize


def test_basic_refuses_unknown_kind_and_wrong_size() -> None:
    with pytest.raises(ValueError, match="kind"):
        Basic("x", "decimal", 4, np.dtype(np.int32))
    with pytest.raises(ValueError, match="itemsize"):
        Basic("x", "signed", 8, np.dtype(np.int32))


def test_of_basic() -> None:
    assert runs(DOUBLE) == [("double", 0, 1)]
    assert (DOUBLE.lb, DOUBLE.ub, DOUBLE.true_lb, DOUBLE.true_ub, DOUBLE.size) == (0, 8, 0, 8, 8)
    assert DOUBLE.extent == 8 and DOUBLE.true_extent == 8
    assert DOUBLE.is_contiguous and DOUBLE.single_basic is BASICS["double"]


def test_contiguous_merges_into_one_run() -> None:
    block = DOUBLE.contiguous(1000)
    assert runs(block) == [("double", 0, 1000)]
    assert block.size == block.extent == 8000 and block.is_contiguous


def test_zero_count_is_empty() -> None:
    empty = DOUBLE.contiguous(0)
    assert empty.size == 0 and empty.extent == 0 and len(empty.run_displ) == 0
    assert empty.is_contiguous and empty.single_basic is None
    assert empty.signature(5) == []


def test_hvector_bounds_and_runs() -> None:
    vector = DOUBLE.hvector(3, 2, 32)
    assert runs(vector) == [("double", 0, 2), ("double", 32, 2), ("double", 64, 2)]
    assert (vector.lb, vector.ub, vector.size) == (0, 80, 48)
    assert not vector.is_contiguous
    assert vector.signature() == [(BASICS["double"], 6)]
    assert vector.signature(2) == [(BASICS["double"], 12)]


def test_negative_stride_keeps_typemap_order() -> None:
    vector = INT.hvector(3, 1, -8)
    assert [int(d) for d in vector.run_displ] == [0, -8, -16]
    assert (vector.lb, vector.ub, vector.true_lb, vector.true_ub) == (-16, 4, -16, 4)


def test_hindexed_and_block() -> None:
    indexed = DOUBLE.hindexed([1, 0, 2], [16, 100, 0])
    assert runs(indexed) == [("double", 16, 1), ("double", 0, 2)]
    assert (indexed.lb, indexed.ub) == (0, 24)  # the empty block adds no bound
    block = INT.hindexed_block(2, [8, 0])
    assert runs(block) == [("int", 8, 2), ("int", 0, 2)]
    assert block.overlaps() is False
    with pytest.raises(ValueError, match="differ in length"):
        DOUBLE.hindexed([1, 2], [0])
    with pytest.raises(ValueError, match="blocklengths must be >= 0"):
        DOUBLE.hindexed([-1], [0])
    with pytest.raises(TypeError, match="integers"):
        DOUBLE.hindexed([1.5], [0])


def test_struct_of_mixed_basics() -> None:
    pair = Description.struct([1, 1], [0, 8], [DOUBLE, INT])
    assert runs(pair) == [("double", 0, 1), ("int", 8, 1)]
    # MPI's epsilon: the extent is padded to the double's alignment, as a C struct would be
    assert (pair.size, pair.lb, pair.ub, pair.alignment) == (12, 0, 16, 8)
    assert pair.single_basic is None
    assert not pair.is_contiguous
    packed = pair.resized(0, 12)  # an explicit upper bound is kept as given
    assert packed.is_contiguous  # extent 12 == size: bytes regardless of basic
    assert Description.struct([1], [0], [packed]).extent == 12
    pair16 = pair.resized(0, 16)
    assert pair16.extent == 16 and not pair16.is_contiguous
    assert pair16.signature(2) == [
        (BASICS["double"], 1),
        (BASICS["int"], 1),
        (BASICS["double"], 1),
        (BASICS["int"], 1),
    ]
    with pytest.raises(TypeError, match="descriptions\\[1\\]"):
        Description.struct([1, 1], [0, 8], [DOUBLE, "int"])  # type: ignore[list-item]


def test_a_struct_extent_is_padded_to_its_strictest_alignment() -> None:
    char, short, int_, double = (BASICS[name] for name in ("char", "short", "int", "double"))
    cases = [  # (blocklengths, displacements, basics) -> the extent numpy's aligned record has
        ([1, 1], [0, 4], [int_, char]),
        ([1, 1, 1], [0, 2, 4], [char, short, char]),
        ([2, 1], [0, 16], [double, char]),
        ([1], [0], [char]),
    ]
    for lengths, displs, basics in cases:
        struct = Description.struct(lengths, displs, [Description.of_basic(b) for b in basics])
        record = np.dtype(
            {
                "names": [f"f{i}" for i in range(len(basics))],
                "formats": [(b.dtype, (n,)) for b, n in zip(basics, lengths, strict=True)],
                "offsets": displs,
            },
            align=True,
        )
        assert struct.extent == record.itemsize, (lengths, displs)


def test_adjacent_runs_of_different_basics_are_one_block() -> None:
    packed = Description.struct([1, 2], [0, 8], [DOUBLE, INT])
    displ, length = packed.blocks
    assert displ.tolist() == [0] and length.tolist() == [16]
    assert packed.is_contiguous


def test_resized_markers_are_sticky() -> None:
    wide = INT.resized(-4, 16)
    assert (wide.lb, wide.ub, wide.true_lb, wide.true_ub) == (-4, 12, 0, 4)
    three = wide.contiguous(3)
    assert (three.lb, three.ub, three.extent) == (-4, 44, 48)
    # The struct's lower bound comes from the marked part only, though INT lies lower.
    mixed = Description.struct([1, 1], [0, 100], [INT, wide])
    assert mixed.lb == 96 and mixed.ub == 112
    assert mixed.true_lb == 0 and mixed.true_ub == 104


def test_queries_refuse_bad_counts() -> None:
    with pytest.raises(ValueError, match="count must be >= 0"):
        DOUBLE.contiguous(-1)
    with pytest.raises(TypeError, match="count must be an integer"):
        DOUBLE.contiguous(1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nbytes"):
        DOUBLE.elements(-1)


def test_elements_counts_whole_basics_only() -> None:
    pair = Description.struct([1, 2], [0, 8], [DOUBLE, INT])
    assert pair.elements(0) == 0
    assert pair.elements(8) == 1
    assert pair.elements(12) == 2
    assert pair.elements(10) is None
    assert pair.elements(16) == 3
    assert pair.elements(24) == 4
    assert pair.elements(16 * 5 + 12) == 17


def test_overlaps() -> None:
    assert not DOUBLE.contiguous(4).overlaps()
    assert DOUBLE.hindexed([2, 1], [0, 8]).overlaps()
    assert DOUBLE.resized(0, 4).overlaps(2)
    assert not DOUBLE.resized(0, 4).overlaps(1)
    assert DOUBLE.resized(0, 0).overlaps(2)
    interleaved = DOUBLE.hvector(4, 1, 16).resized(0, 8)
    assert not interleaved.overlaps(2)
    assert interleaved.overlaps(3)


def test_descriptions_are_immutable() -> None:
    vector = DOUBLE.hvector(3, 1, 16)
    with pytest.raises(ValueError):
        vector.run_displ[0] = 5
    with pytest.raises(AttributeError):
        vector.size = 3  # type: ignore[misc]
