"""The one-step reading of whole contiguous buffers for the hot collectives (plain_spec).

It accepts a subset of what ``parse_buffer`` accepts and must make exactly the same spec for
it; everything else is None, so the collective takes the general path (which raises the errors).
"""

from __future__ import annotations

import array

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ompy import MPI
from ompy.ompi.api.plain_buffers import plain_spec
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.datatype.buffer import parse_buffer

BASIC = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32]
BASIC += [np.uint64, np.float32, np.float64, np.longdouble]


def same_spec(got, want) -> bool:
    return (
        got.view.tobytes() == want.view.tobytes()
        and got.view.format == want.view.format == "B"
        and got.count == want.count
        and got.datatype is want.datatype
        and got.offset == want.offset == 0
        and not got.in_place
        and got.convertor is None
    )


@given(
    arrays=hnp.arrays(
        st.sampled_from(BASIC), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
    ),
    writable=st.booleans(),
    readonly_array=st.booleans(),
)
def test_a_whole_array_reads_as_parse_buffer_reads_it_or_not_at_all(
    arrays, writable, readonly_array
):
    if readonly_array:
        arrays.flags.writeable = False
    got = plain_spec(arrays, writable=writable)
    if writable and readonly_array:
        assert got is None  # the general path raises its error for a read-only receive buffer
        return
    if got is None:
        assert 0 in arrays.shape  # only the empty shapes with a zero are left to the general path
        return
    assert same_spec(got, parse_buffer(arrays, readonly=not writable))


@given(step=st.integers(2, 3), transpose=st.booleans())
def test_a_non_contiguous_array_takes_the_general_path(step, transpose):
    base = np.arange(24, dtype=np.float64).reshape(4, 6)
    view = base.T if transpose else base[:, ::step]
    assert plain_spec(view, writable=False) is None


@pytest.mark.parametrize(
    "buf",
    [
        b"12345678",
        bytearray(b"abcdefgh"),
    ],
)
def test_bytes_and_bytearray_are_bytes(buf):
    got = plain_spec(buf, writable=False)
    assert got is not None and same_spec(got, parse_buffer(buf))


def test_read_only_bytes_cannot_receive_on_this_path():
    assert plain_spec(b"12345678", writable=True) is None
    assert plain_spec(bytearray(8), writable=True) is not None


@pytest.mark.parametrize(
    "buf",
    [
        None,
        MPI.IN_PLACE,
        MPI.BOTTOM,
        [np.zeros(4), MPI.DOUBLE],
        [np.zeros(4), 2],
        (np.zeros(4), 2, MPI.DOUBLE),
        array.array("d", [1.0, 2.0]),
        memoryview(bytearray(8)),
        np.zeros(2, dtype=np.complex128),
        np.zeros(2, dtype=">f8" if np.little_endian else "<f8"),
        np.zeros(2, dtype=[("a", "i4"), ("b", "f8")]),
        np.float64(1.0),
        3,
    ],
    ids=lambda buf: type(buf).__name__,
)
def test_every_other_form_takes_the_general_path(buf):
    assert plain_spec(buf, writable=False) is None


# -- the collectives that use it: the same results as the general path, the same errors -----

DTYPES = [np.int32, np.int64, np.uint8, np.float32, np.float64]


def _typed(array):
    """The same buffer in the general path's form: ``[buf, datatype]``."""
    return [array, MPI.Datatype.fromcode(array.dtype.char)]


@pytest.mark.parametrize("size", [1, 2, 3])
def test_allreduce_reduce_and_bcast_agree_with_the_general_path(size):
    def body(comm):
        rank, results = comm.Get_rank(), []
        for dtype in DTYPES:
            for count in (1, 3, 17):
                x = (np.arange(count) + rank + 1).astype(dtype)
                fast, slow = np.zeros(count, dtype), np.zeros(count, dtype)
                comm.Allreduce(x, fast, op=MPI.MAX)
                comm.Allreduce(_typed(x), _typed(slow), op=MPI.MAX)
                inplace = x.copy()
                comm.Allreduce(MPI.IN_PLACE, inplace, op=MPI.MAX)
                results.append(fast.tobytes() == slow.tobytes() == inplace.tobytes())
                none_send = x.copy()
                comm.Allreduce(None, none_send, MPI.MAX)  # None is MPI.IN_PLACE, as in mpi4py
                results.append(none_send.tobytes() == fast.tobytes())
                for root in range(size):
                    fast, slow = np.zeros(count, dtype), np.zeros(count, dtype)
                    comm.Reduce(x, fast, op=MPI.MIN, root=root)
                    comm.Reduce(_typed(x), _typed(slow), op=MPI.MIN, root=np.int64(root))
                    results.append(fast.tobytes() == slow.tobytes())
                    b = x.copy() if rank == root else np.zeros(count, dtype)
                    comm.Bcast(b, root=root)
                    results.append(
                        b.tobytes() == (np.arange(count) + root + 1).astype(dtype).tobytes()
                    )
        return all(results)

    assert run_ranks(make_world(size), body, timeout=120) == [True] * size


def test_the_errors_of_the_general_path_still_reach_the_program():
    def body(comm):
        rank, caught = comm.Get_rank(), []

        def error(call):
            try:
                call()
            except (MPI.Exception, ValueError, TypeError, BufferError) as exc:
                caught.append(type(exc).__name__)
                return exc
            return None

        x = np.ones(2)
        for bad_root in (2, -1):
            exc = error(lambda bad_root=bad_root: comm.Bcast(x, root=bad_root))
            assert exc.Get_error_class() == MPI.ERR_ROOT
            exc = error(lambda bad_root=bad_root: comm.Reduce(x, np.zeros(2), root=bad_root))
            assert exc.Get_error_class() == MPI.ERR_ROOT
        exc = error(lambda: comm.Allreduce(x, np.zeros(3)))
        assert "count" in str(exc)
        exc = error(lambda: comm.Allreduce(x, np.zeros(2, np.float32)))
        assert "datatype" in str(exc)
        exc = error(lambda: comm.Allreduce(x, np.zeros(2), op=MPI.BAND))  # no BAND on doubles
        assert exc.Get_error_class() == MPI.ERR_OP
        exc = error(lambda: comm.Reduce(x, np.zeros(2), op=MPI.BAND, root=1 - rank))
        assert exc.Get_error_class() == MPI.ERR_OP
        frozen = np.zeros(2)
        frozen.flags.writeable = False
        assert error(lambda: comm.Allreduce(x, frozen)) is not None
        assert error(lambda: comm.Bcast(frozen, root=1 - rank)) is not None
        assert error(lambda: comm.Reduce(MPI.IN_PLACE, x, root=1 - rank)) is not None
        ro = frozen if rank == 0 else np.ones(2)
        comm.Bcast(ro, root=0)  # the root only reads its buffer
        assert ro.tolist() == [0.0, 0.0]
        comm.Barrier()
        return len(caught)

    assert run_ranks(make_world(2), body, timeout=60) == [11, 11]
