"""The vector message forms of Scatterv/Gatherv/Allgatherv/Alltoallv, read as mpi4py reads them.

``[buf, counts, displs, datatype]`` and its shorter forms: no counts splits the buffer as evenly
as possible (the first ``n % p`` blocks one element longer), one int count is every block's
count, no displacements are the running sum of the counts, and an int displacement is a stride
(block ``i`` starts at ``i * stride``).  A tuple in the counts position is a
``(counts, displs)`` pair.
"""

from __future__ import annotations

import numpy as np
import pytest

from ompy import MPI
from ompy.ompi.api.vector_messages import parse_vector_message
from ompy.ompi.errors import Exception as MPIException


def parse(msg, blocks, **kw):
    return parse_vector_message(msg, blocks, call="Comm.Scatterv", what="sendbuf", **kw)


def layout(spec):
    return list(spec.counts), list(spec.displs)


@pytest.mark.parametrize(
    ("n", "p", "counts"),
    [
        (10, 3, [4, 3, 3]),
        (10, 4, [3, 3, 2, 2]),
        (3, 5, [1, 1, 1, 0, 0]),
        (0, 3, [0, 0, 0]),
        (12, 4, [3, 3, 3, 3]),
        (7, 1, [7]),
    ],
)
def test_no_counts_splits_evenly_with_the_remainder_on_the_first_ranks(n, p, counts):
    displs = list(np.cumsum([0, *counts[:-1]])) if counts else []
    for msg in (np.arange(n, dtype="d"), [np.arange(n, dtype="d"), MPI.DOUBLE]):
        assert layout(parse(msg, p)) == (counts, displs)


def test_a_tuple_pair_and_four_items_give_counts_and_displacements():
    data = np.arange(10.0)
    for msg in (
        [data, ([1, 2], [0, 5]), MPI.DOUBLE],
        [data, [1, 2], [0, 5], MPI.DOUBLE],
        [data, ([1, 2], [0, 5])],
    ):
        spec = parse(msg, 2)
        assert layout(spec) == ([1, 2], [0, 5])
        assert bytes(spec.block(1)) == data[5:7].tobytes()


def test_counts_alone_give_running_sum_displacements():
    assert layout(parse([np.arange(6.0), [1, 2, 3]], 3)) == ([1, 2, 3], [0, 1, 3])
    assert layout(parse([np.arange(6.0), np.array([3, 0, 3]), "d"], 3)) == ([3, 0, 3], [0, 3, 3])


def test_one_int_count_is_every_blocks_count():
    assert layout(parse([np.arange(10.0), 3, MPI.DOUBLE], 3)) == ([3, 3, 3], [0, 3, 6])
    assert layout(parse([np.arange(10.0), 2], 3)) == ([2, 2, 2], [0, 2, 4])


def test_an_int_displacement_is_a_constant_stride():
    data = np.arange(12, dtype="i")
    spec = parse([data, 2, 4, MPI.INT], 3)
    assert layout(spec) == ([2, 2, 2], [0, 4, 8])
    assert bytes(spec.block(2)) == data[8:10].tobytes()
    assert layout(parse([data, ([1, 2, 1], 4), MPI.INT], 3)) == ([1, 2, 1], [0, 4, 8])
    assert layout(parse([data, (3, 3)], 4)) == ([3] * 4, [0, 3, 6, 9])  # mpi4py: a tuple pair


def test_the_datatype_is_inferred_or_given_as_a_code():
    assert parse(np.arange(4, dtype="i"), 2).datatype == MPI.INT
    assert parse([bytearray(16), [2, 2], "i"], 2).datatype == MPI.INT


def test_none_or_bottom_with_zero_counts_is_an_empty_message():
    assert layout(parse([None, [0, 0], MPI.INT], 2)) == ([0, 0], [0, 0])
    assert parse(None, 3).counts == (0, 0, 0)


def test_in_place_only_where_allowed():
    assert parse(MPI.IN_PLACE, 3, in_place=True).in_place
    with pytest.raises(TypeError, match=r"Comm\.Scatterv: sendbuf: MPI\.IN_PLACE"):
        parse(MPI.IN_PLACE, 3)


def test_receive_buffers_must_be_writable():
    with pytest.raises(BufferError, match="read-only"):
        parse(b"abcd", 2, readonly=False)


@pytest.mark.parametrize(
    ("msg", "blocks", "error", "words"),
    [
        ([np.arange(6.0), [1, 2], MPI.DOUBLE], 3, ValueError, "3 counts (one per rank), got 2"),
        ([np.arange(6.0), [1, 2], [0], MPI.DOUBLE], 2, ValueError, "2 displacements"),
        ([np.arange(6.0), ([1, 2], [0, 5]), MPI.DOUBLE], 2, ValueError, "block 1 (2 x "),
        ([np.arange(6.0), [1, -1], MPI.DOUBLE], 2, MPIException, "count -1 of rank 1"),
        ([np.arange(6.0), [1, 1], [0, -2], MPI.DOUBLE], 2, ValueError, "displacement -2 of rank"),
        ([np.arange(6.0), 1, -1, MPI.DOUBLE], 2, ValueError, "displacement -1 of rank 1"),
        ([np.arange(6.0), 5, 2, MPI.DOUBLE], 2, ValueError, "does not fit"),
        ([np.arange(6.0), 1.5, MPI.DOUBLE], 2, TypeError, "counts: expecting an int"),
        ([np.arange(6.0), [1, "a"], MPI.DOUBLE], 2, TypeError, "str 'a'"),
        ([np.arange(6.0), [1, 1], 0.5, MPI.DOUBLE], 2, TypeError, "displacements: expecting"),
        ([np.arange(6.0), (1, 2, 3), MPI.DOUBLE], 3, ValueError, "(counts, displs) pair"),
        ([np.arange(6.0), 1, 2, 3, 4], 2, ValueError, "2 to 4 items, got 5"),
        ([np.arange(6.0), [1, 1], 3.0], 2, TypeError, "datatype"),
        ([bytearray(7), "i"], 2, ValueError, "not a whole number of MPI_INT"),
        ([None, [1, 0], MPI.INT], 2, ValueError, "MPI.BOTTOM"),
        (object(), 2, TypeError, "Comm.Scatterv: sendbuf"),
    ],
)
def test_bad_specs_name_what_was_wrong(msg, blocks, error, words):
    with pytest.raises(error) as caught:
        parse(msg, blocks)
    assert words in str(caught.value)
    assert "Comm.Scatterv: sendbuf" in str(caught.value)
