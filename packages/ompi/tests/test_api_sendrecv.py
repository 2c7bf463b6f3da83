"""Send-receive in every form: ``Sendrecv``, ``Sendrecv_replace``, ``Isendrecv``,
``Isendrecv_replace``, with every buffer form mpi4py accepts, against the loopback PML."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.request import Request
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ompy.ompi.datatype.predefined import DOUBLE, INT
from ompy.ompi.status import Status

VECTOR = DOUBLE.Create_vector(3, 1, 2).Commit()


def ring(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    return rank, size, (rank + 1) % size, (rank - 1) % size


#: (send form, receive form, what arrives) built from the sender's rank ``r``.
def forms(r):
    data = np.arange(8, dtype="d") + 100 * r
    return [
        ("buf", lambda: data, lambda out: out, lambda: np.zeros(8), data),
        ("[buf, DOUBLE]", lambda: [data, DOUBLE], lambda out: [out, DOUBLE], None, data),
        ("[buf, 'd']", lambda: [data, "d"], lambda out: [out, "d"], None, data),
        ("[buf, count]", lambda: [data, 5], lambda out: [out, 5], None, data[:5]),
        ("[buf, count, type]", lambda: [data, 3, DOUBLE], lambda out: [out, 3, DOUBLE], None,
         data[:3]),
        ("[buf, (count, displ), type]", lambda: [data, (2, 4), DOUBLE],
         lambda out: [out, (2, 4), DOUBLE], None, data[4:6]),
        ("[buf, count, displ, type]", lambda: [data, 3, 1, DOUBLE],
         lambda out: [out, 3, 1, DOUBLE], None, data[1:4]),
        ("[buf, 1, VECTOR]", lambda: [data, 1, VECTOR], lambda out: [out, 1, VECTOR], None,
         data[0:6:2]),
        ("strided", lambda: data[::2], lambda out: out[::2], None, data[::2]),
    ]  # fmt: skip


def _received(form, out):
    """The elements a receive form wrote, read back from the receive buffer."""
    return {
        "buf": out,
        "[buf, DOUBLE]": out,
        "[buf, 'd']": out,
        "[buf, count]": out[:5],
        "[buf, count, type]": out[:3],
        "[buf, (count, displ), type]": out[4:6],
        "[buf, count, displ, type]": out[1:4],
        "[buf, 1, VECTOR]": out[0:6:2],
        "strided": out[::2],
    }[form]


@pytest.mark.parametrize("form", [f[0] for f in forms(0)])
@pytest.mark.parametrize("call", ["Sendrecv", "Isendrecv"])
def test_every_buffer_form_moves_the_same_elements(form, call):
    def body(comm):
        rank, _size, right, left = ring(comm)
        (entry,) = [f for f in forms(rank) if f[0] == form]
        _name, send_form, recv_form, _, _ = entry
        out = np.full(8, -1.0)
        status = Status()
        if call == "Sendrecv":
            comm.Sendrecv(send_form(), right, 3, recv_form(out), left, 3, status)
        else:
            comm.Isendrecv(send_form(), right, 3, recv_form(out), left, 3).Wait(status)
        (theirs,) = [f for f in forms(left) if f[0] == form]
        np.testing.assert_array_equal(_received(form, out), theirs[4])
        assert status.Get_source() == left and status.Get_tag() == 3
        assert status.Get_count(DOUBLE) == len(theirs[4])
        return True

    assert run_ranks(make_world(3), body) == [True] * 3


@pytest.mark.parametrize("form", [f[0] for f in forms(0)])
@pytest.mark.parametrize("call", ["Sendrecv_replace", "Isendrecv_replace"])
def test_replace_in_every_buffer_form_swaps_in_place(form, call):
    def body(comm):
        rank, _size, right, left = ring(comm)
        (entry,) = [f for f in forms(rank) if f[0] == form]
        data = np.arange(8, dtype="d") + 100 * rank
        # the same form, over a buffer that starts as this rank's data
        replaced = data.copy()
        spec = {
            "buf": replaced,
            "[buf, DOUBLE]": [replaced, DOUBLE],
            "[buf, 'd']": [replaced, "d"],
            "[buf, count]": [replaced, 5],
            "[buf, count, type]": [replaced, 3, DOUBLE],
            "[buf, (count, displ), type]": [replaced, (2, 4), DOUBLE],
            "[buf, count, displ, type]": [replaced, 3, 1, DOUBLE],
            "[buf, 1, VECTOR]": [replaced, 1, VECTOR],
            "strided": replaced[::2],
        }[form]
        if call == "Sendrecv_replace":
            comm.Sendrecv_replace(spec, right, 5, left, 5)
        else:
            comm.Isendrecv_replace(spec, right, 5, left, 5).Wait()
        (theirs,) = [f for f in forms(left) if f[0] == form]
        np.testing.assert_array_equal(_received(form, replaced), theirs[4])
        # what the form does not cover is untouched
        untouched = np.ones(8, dtype=bool)
        view = _received(form, untouched.view())
        view[...] = False
        np.testing.assert_array_equal(replaced[untouched], data[untouched])
        assert entry[0] == form
        return True

    assert run_ranks(make_world(3), body) == [True] * 3


def test_isendrecv_returns_at_once_and_its_status_is_the_receive():
    def body(comm):
        rank = comm.Get_rank()
        out = np.zeros(2, dtype="i")
        if rank == 0:
            request = comm.Isendrecv(np.array([1, 2], dtype="i"), 1, 9, out, 1, ANY_TAG)
            assert isinstance(request, Request)
            flag = request.Test()
            assert flag is False  # rank 1 has not sent yet: it waits for our message first
            comm.Barrier()
            status = Status()
            request.Wait(status)
            assert (status.Get_source(), status.Get_tag(), status.Get_count(INT)) == (1, 4, 1)
            assert out.tolist() == [7, 0]
            assert not request
        else:
            comm.Barrier()
            got = np.zeros(2, dtype="i")
            comm.Recv(got, 0, 9)
            assert got.tolist() == [1, 2]
            comm.Send(np.array([7], dtype="i"), 0, 4)
        return True

    assert run_ranks(make_world(2), body) == [True, True]


def test_proc_null_sides_move_nothing_and_read_no_buffer():
    def body(comm):
        rank, _size, right, left = ring(comm)
        status = Status()
        comm.Isendrecv(None, PROC_NULL, 0, None, PROC_NULL).Wait(status)
        assert status.Get_source() == PROC_NULL and status.Get_tag() == ANY_TAG
        assert status.Get_count() == 0
        comm.Sendrecv_replace(None, PROC_NULL, 0, PROC_NULL, 0, status)
        assert status.Get_source() == PROC_NULL
        comm.Isendrecv_replace(None, PROC_NULL, 0, PROC_NULL).Wait(status)
        assert status.Get_source() == PROC_NULL
        # one side real: a send to the right with nothing received, then the matching receive
        comm.Isendrecv(np.array([rank], "i"), right, 2, None, PROC_NULL).Wait()
        got = np.zeros(1, "i")
        comm.Isendrecv(None, PROC_NULL, 0, got, left, 2).Wait(status)
        assert got[0] == left and status.Get_source() == left
        buf = np.array([rank * 10], "i")
        comm.Isendrecv_replace(buf, right, 6, PROC_NULL).Wait()
        assert buf[0] == rank * 10  # only sent
        keep = np.zeros(1, "i")
        comm.Isendrecv_replace(keep, PROC_NULL, 0, left, 6).Wait()
        assert keep[0] == left * 10
        return True

    assert run_ranks(make_world(3), body) == [True] * 3


def test_bad_arguments_raise_before_anything_is_posted():
    comm = make_world(2)[0]
    buf = np.zeros(2)
    with pytest.raises(errors.Exception) as info:
        comm.Isendrecv(buf, 2, 0, buf, 0)
    assert info.value.Get_error_class() == errors.ERR_RANK and "destination rank 2" in str(
        info.value
    )
    with pytest.raises(errors.Exception) as info:
        comm.Isendrecv(buf, 1, 0, buf, 5)
    assert info.value.Get_error_class() == errors.ERR_RANK and "source rank 5" in str(info.value)
    with pytest.raises(errors.Exception) as info:
        comm.Isendrecv(buf, 1, -4, buf, 1)
    assert info.value.Get_error_class() == errors.ERR_TAG
    with pytest.raises(errors.Exception) as info:
        comm.Isendrecv_replace(buf, 1, 0, 1, -7)
    assert info.value.Get_error_class() == errors.ERR_TAG
    with pytest.raises(TypeError):
        comm.Isendrecv(object(), 1, 0, buf, 1)
    with pytest.raises(BufferError):  # a read-only receive buffer
        comm.Isendrecv(buf, 1, 0, b"12345678", 1)
    with pytest.raises(BufferError):
        comm.Isendrecv_replace(b"12345678", 1, 0, 1)
    # nothing was left posted: the next receive from rank 1 sees rank 1's message only
    assert comm.Iprobe(ANY_SOURCE, ANY_TAG) is False


def test_a_truncated_receive_fails_the_request_after_both_halves_finish():
    def body(comm):
        rank = comm.Get_rank()
        other = 1 - rank
        small = np.zeros(1)
        request = comm.Isendrecv(np.arange(4.0), other, 0, small, other, 0)
        with pytest.raises(errors.Exception) as info:
            request.Wait()
        return info.value.Get_error_class()

    assert run_ranks(make_world(2), body) == [errors.ERR_TRUNCATE] * 2


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 40), min_size=3, max_size=3),
    shift=st.integers(1, 2),
)
def test_isendrecv_in_a_ring_delivers_each_neighbours_data(sizes, shift):
    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        dest, source = (rank + shift) % size, (rank - shift) % size
        out = np.full(sizes[source], -1, dtype="i")
        status = Status()
        comm.Isendrecv(np.full(sizes[rank], rank, "i"), dest, rank, out, source, ANY_TAG).Wait(
            status
        )
        assert (out == source).all() and status.Get_tag() == source
        return status.Get_count(INT)

    assert run_ranks(make_world(3), body) == [sizes[(r - shift) % 3] for r in range(3)]
