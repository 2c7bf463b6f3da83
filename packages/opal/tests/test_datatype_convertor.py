"""The convertor's copy strategies, each checked against numpy on layouts large enough to use it.

Regular layouts (vectors, subarrays) compile to a grid and move as strided copies; irregular
ones by fancy indexing per block length, or a byte gather when lengths are many.  Each is
checked whole and in fragments that cut elements and basics, in both directions.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ompy.opal.datatype import BASICS, Convertor, Description

DOUBLE = Description.of_basic(BASICS["double"])
INT = Description.of_basic(BASICS["int"])
CHAR = Description.of_basic(BASICS["char"])


def expand(description: Description, origin: int, count: int) -> np.ndarray:
    """Buffer byte of every packed byte, from the runs (checked against the typemap elsewhere)."""
    starts = np.repeat(description.run_displ, description.run_bytes)
    within = np.arange(description.size) - np.repeat(
        np.cumsum(description.run_bytes) - description.run_bytes, description.run_bytes
    )
    element = starts + within
    shifts = origin + np.arange(count) * description.extent
    return (shifts[:, None] + element[None, :]).reshape(-1)


def check_round_trip(description: Description, count: int, fragment: int) -> None:
    index = expand(description, 0, count)
    low, high = int(index.min()), int(index.max()) + 1
    origin = 3 - low
    buffer = np.random.default_rng(7).integers(0, 256, high - low + 6, dtype=np.uint8)
    expected = buffer[index + origin]
    convertor = Convertor(description, memoryview(buffer), origin, count)
    assert bytes(convertor.pack_all()) == expected.tobytes()
    pieces = bytearray()
    out = bytearray(fragment)
    position = 0
    while position < convertor.packed_size:
        written = convertor.pack(position, out)
        pieces += out[:written]
        position += written
    assert bytes(pieces) == expected.tobytes()
    target = np.zeros_like(buffer)
    back = Convertor(description, memoryview(target), origin, count)
    for start in range(0, len(expected), fragment):
        back.unpack(start, expected[start : start + fragment])
    reference = np.zeros_like(buffer)
    reference[index + origin] = expected
    assert np.array_equal(target, reference)
    target[:] = 0
    back.unpack_all(expected)
    assert np.array_equal(target, reference)


@pytest.mark.parametrize("fragment", [1, 7, 8, 100, 4096])
def test_vector_is_a_one_dimensional_grid(fragment: int) -> None:
    vector = DOUBLE.hvector(500, 1, 24)
    assert vector.plan.grid_shape == (500,) and vector.plan.grid_strides == (24,)
    check_round_trip(vector, 2, fragment)
    check_round_trip(vector.resized(0, 8), 3, fragment)  # elements interleave


@pytest.mark.parametrize("fragment", [5, 64, 1000])
def test_subarray_is_a_two_dimensional_grid(fragment: int) -> None:
    # A 3-D subarray: 4 doubles of each row, 5 rows of each plane, 6 planes.
    cube = DOUBLE.contiguous(4).hvector(5, 1, 80).hvector(6, 1, 1000)
    assert cube.plan.grid_shape == (6, 5) and cube.plan.grid_strides == (1000, 80)
    check_round_trip(cube, 2, fragment)


@pytest.mark.parametrize("fragment", [3, 64])
def test_negative_strides(fragment: int) -> None:
    backwards = INT.hvector(300, 2, -12)
    assert backwards.plan.grid_strides == (-12,)
    check_round_trip(backwards, 3, fragment)
    check_round_trip(DOUBLE.hvector(40, 1, 16).resized(-8, -320), 3, fragment)


@pytest.mark.parametrize("fragment", [9, 256])
def test_irregular_blocks_of_one_length(fragment: int) -> None:
    displacements = np.random.default_rng(1).permutation(400) * 16
    scattered = DOUBLE.hindexed_block(1, displacements)
    assert scattered.plan.grid_shape is None
    check_round_trip(scattered, 2, fragment)


@pytest.mark.parametrize("fragment", [9, 256])
def test_few_block_lengths_are_grouped(fragment: int) -> None:
    lengths = np.tile([1, 3, 2], 100)
    displacements = np.arange(300) * 40
    indexed = INT.hindexed(lengths, displacements)
    assert len(np.unique(indexed.blocks[1])) == 3
    check_round_trip(indexed, 2, fragment)


@pytest.mark.parametrize("fragment", [9, 256])
def test_many_block_lengths_use_a_byte_gather(fragment: int) -> None:
    lengths = np.arange(1, 41)
    displacements = np.cumsum(lengths + 3) - lengths
    indexed = CHAR.hindexed(lengths, displacements)
    assert len(np.unique(indexed.blocks[1])) == 40
    check_round_trip(indexed, 3, fragment)


def test_struct_of_mixed_basics() -> None:
    pair = Description.struct([1, 1], [0, 8], [DOUBLE, INT]).resized(0, 16)
    records = Description.struct([3, 2], [0, 64], [pair, CHAR.contiguous(3)])
    check_round_trip(records, 4, 5)


def test_contiguous_layouts_hand_out_the_buffer_itself() -> None:
    array = np.arange(100, dtype=np.float64)
    block = DOUBLE.contiguous(10)
    convertor = Convertor(block, memoryview(array), 16, 3)
    view = convertor.contiguous_view()
    assert view is not None and len(view) == 240
    assert np.shares_memory(np.frombuffer(view, np.uint8), array)
    assert np.frombuffer(view, np.float64).tolist() == list(range(2, 32))
    assert np.shares_memory(np.frombuffer(convertor.pack_all(), np.uint8), array)
    # Partial packing of a contiguous layout is one slice.
    out = bytearray(12)
    assert convertor.pack(4, out) == 12
    assert bytes(out) == array.tobytes()[20:32]


def test_plan_is_compiled_once_per_description() -> None:
    vector = DOUBLE.hvector(10, 1, 16)
    assert vector.plan is vector.plan
    buffers = [np.zeros(40) for _ in range(2)]
    first, second = (Convertor(vector, memoryview(b), 0, 1) for b in buffers)
    assert first.plan is second.plan is vector.plan


def test_count_zero_and_empty_types_move_nothing() -> None:
    buffer = memoryview(bytearray(8))
    assert Convertor(DOUBLE.hvector(3, 1, 16), buffer, 0, 0).packed_size == 0
    empty = DOUBLE.contiguous(0)
    convertor = Convertor(empty, buffer, 100, 5)  # no data: no bytes to check
    assert convertor.packed_size == 0 and convertor.pack(0, bytearray(4)) == 0
    assert bytes(convertor.pack_all()) == b""


def test_stream_stops_where_the_data_ends() -> None:
    vector = INT.hvector(3, 1, 8)
    convertor = Convertor(vector, memoryview(bytearray(range(24))), 0, 1)
    out = bytearray(10)
    assert convertor.pack(6, out) == 6
    assert bytes(out[:6]) == bytes([10, 11, 16, 17, 18, 19])
    target = bytearray(24)
    back = Convertor(vector, memoryview(target), 0, 1)
    assert back.unpack(10, bytes(range(100, 110))) == 2
    assert target[18:20] == bytes([100, 101])


def test_every_split_of_a_small_layout() -> None:
    layout = Description.struct([2, 1], [0, 11], [CHAR, INT]).hvector(3, 2, 20)
    index = expand(layout, 2, 2)
    buffer = np.arange(int(index.max()) + 10, dtype=np.uint8)
    convertor = Convertor(layout, memoryview(buffer), 2, 2)
    expected = buffer[index].tobytes()
    for cut_a, cut_b in itertools.combinations(range(len(expected) + 1), 2):
        out = bytearray(cut_b - cut_a)
        assert convertor.pack(cut_a, out) == cut_b - cut_a
        assert bytes(out) == expected[cut_a:cut_b]
