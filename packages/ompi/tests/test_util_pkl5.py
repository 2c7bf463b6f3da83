"""``ompy.util.pkl5`` in one process (messages to itself): the wire format and the wrappers.

The multi-rank behaviour (collectives, intercommunicators, objects beyond 2 GiB) is tested
through ``ompy run`` in ``integration/pyhelpers``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ompy import MPI
from ompy.util import pkl5

#: Built on this interpreter's own MPI (see conftest.py).
pytestmark = pytest.mark.usefixtures("interpreter_mpi")


class _World:
    """pkl5's view of this interpreter's ``COMM_WORLD`` as it is when a test runs (the
    ``interpreter_mpi`` fixture may install it after this module is imported)."""

    def __getattr__(self, name: str) -> object:
        return getattr(pkl5.Intracomm(MPI.COMM_WORLD), name)


comm = _World()

arrays = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.int32, np.uint8, np.complex128]),
    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=300),
)
objects = st.recursive(
    st.none() | st.integers() | st.text(max_size=20) | st.binary(max_size=3000) | arrays,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=8,
)


def same(a: object, b: object) -> bool:
    if isinstance(a, np.ndarray):
        # bit for bit (NaN included): the bytes must arrive unchanged
        return (
            isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and a.tobytes() == b.tobytes()
        )
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


@settings(max_examples=60, deadline=None)
@given(obj=objects, tag=st.integers(0, 100))
def test_every_way_to_receive_gives_the_object_back(obj: object, tag: int) -> None:
    status = MPI.Status()
    comm.send(obj, 0, tag)
    assert same(comm.recv(None, 0, tag, status), obj)
    assert status.Get_source() == 0 and status.Get_tag() == tag
    nbytes = status.Get_count(MPI.BYTE)
    request = comm.isend(obj, 0, tag)
    probed = MPI.Status()
    message = comm.mprobe(0, tag, probed)
    assert probed.Get_count(MPI.BYTE) == nbytes  # the parts' bytes, as the receive counts them
    assert same(message.recv(), obj)
    assert request.wait() is None
    request = comm.issend(obj, 0, tag)
    message = comm.improbe(0, tag)
    assert message is not None
    assert same(message.irecv().wait(), obj)
    request.wait()
    assert same(comm.sendrecv(obj, 0, tag, None, 0, tag), obj)


def test_out_of_band_arrays_travel_as_parts_of_their_own() -> None:
    big = np.arange(200_000, dtype=np.float64)
    request = comm.isend([big, big[::2].copy()], 0, 5)
    assert len(request) == 4  # frame, pickle stream, two arrays
    message = comm.mprobe(0, 5)
    assert len(message) == 4
    status = MPI.Status()
    first, second = message.recv(status)
    assert status.Get_count(MPI.BYTE) > big.nbytes * 1.5
    np.testing.assert_array_equal(first, big)
    np.testing.assert_array_equal(second, big[::2])
    pkl5.Request.waitall([request])


def test_receive_into_a_given_buffer_and_improbe_without_message() -> None:
    assert comm.improbe(0, 77) is None
    comm.send(b"x" * 100, 0, 77)
    assert comm.recv(bytearray(1 << 12), 0, 77) == b"x" * 100
    comm.send(b"y" * 100, 0, 77)
    assert comm.recv(bytearray(3), 0, 77) == b"y" * 100  # too small: a buffer of its own


def test_proc_null_sends_nothing_and_receives_none() -> None:
    comm.send("lost", MPI.PROC_NULL)
    status = MPI.Status()
    assert comm.recv(None, MPI.PROC_NULL, 0, status) is None
    assert status.Get_source() == MPI.PROC_NULL
    message = comm.mprobe(MPI.PROC_NULL)
    assert message == MPI.MESSAGE_NO_PROC
    assert message.recv() is None
    assert comm.isend(1, MPI.PROC_NULL).wait() is None


def test_requests_and_messages_compare_like_mpi4py() -> None:
    assert pkl5.Request() == MPI.REQUEST_NULL
    assert not pkl5.Request()
    assert pkl5.Message() == MPI.MESSAGE_NULL
    assert not pkl5.Message()
    assert pkl5.Message(MPI.MESSAGE_NULL) == pkl5.Message()
    request = comm.isend(1, 0, 9)
    assert request != MPI.REQUEST_NULL
    flag, obj = request.test()
    assert flag and obj is None
    message = comm.mprobe(0, 9)
    receive = message.irecv()
    statuses: list[MPI.Status] = []
    assert pkl5.Request.testall([receive], statuses) == (True, [1])
    assert len(statuses) == 1 and statuses[0].Get_tag() == 9
    with pytest.raises(MPI.Exception) as error:
        pkl5.Message().recv()
    assert error.value.Get_error_class() == MPI.ERR_REQUEST


def test_irecv_is_refused_with_the_way_out() -> None:
    with pytest.raises(RuntimeError, match="improbe"):
        comm.irecv()


def test_collectives_on_one_rank_and_bad_arguments() -> None:
    data = {"a": np.ones(50_000)}
    assert same(comm.bcast(data), data)
    assert same(comm.gather(data), [data])
    assert same(comm.scatter([data]), data)
    assert same(comm.allgather(data), [data])
    assert same(comm.alltoall([data]), [data])
    for call in (lambda: comm.bcast(1, root=1), lambda: comm.gather(1, root=-3)):
        with pytest.raises(MPI.Exception) as error:
            call()
        assert error.value.Get_error_class() == MPI.ERR_ROOT
    with pytest.raises(ValueError, match="expecting 1 items, got 2"):
        comm.alltoall([1, 2])


def test_duplicates_keep_the_wrapper_and_free_the_private_context() -> None:
    dup = comm.Dup()
    assert isinstance(dup, pkl5.Intracomm)
    assert dup.bcast("once") == "once"  # makes the private duplicate
    dup.Free()  # and freeing the communicator frees it (no leak of context ids)
    assert dup == MPI.COMM_NULL
