"""Messages of derived datatypes and strided arrays: buffer specs, point-to-point and
collectives through the API against the loopback PML (the real transports are in
``integration/datatypes``).

A layout's message is its packed stream: the elements' data in typemap order.  The reference
every test compares with is numpy indexing of the same bytes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import IN_PLACE
from ompy.ompi.datatype.buffer import ReadOnlyBufferError, parse_buffer
from ompy.ompi.datatype.predefined import DOUBLE, DOUBLE_INT, FLOAT, INT, SHORT
from ompy.ompi.op import MAX, MAXLOC, MINLOC, SUM
from ompy.ompi.status import Status

# A vector of 3 doubles every other one: data at doubles 0, 2, 4 of each 5-double extent.
VECTOR = DOUBLE.Create_vector(3, 1, 2).Commit()


def vector_mask(count: int, total: int) -> np.ndarray:
    """Which doubles of a buffer of ``total`` the first ``count`` VECTOR elements cover."""
    mask = np.zeros(total, bool)
    for element in range(count):
        mask[element * 5 : element * 5 + 5 : 2] = True
    return mask


def error_class(call, *args):
    with pytest.raises(errors.Exception) as info:
        call(*args)
    return info.value.Get_error_class(), str(info.value)


# -- buffer specs --------------------------------------------------------------------------------


@st.composite
def strided_arrays(draw):
    """A non-contiguous (or contiguous) view of a fresh array: any dtype, steps, negatives."""
    dtype = draw(st.sampled_from(["d", "i", "h", "b", "F"]))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    base = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    index = tuple(slice(None, None, draw(st.sampled_from([1, 2, 3, -1, -2]))) for _ in range(ndim))
    view = base[index]
    if ndim > 1 and draw(st.booleans()):
        view = view.T
    return base, view


def _order(view: np.ndarray) -> str:
    """The element order a buffer's message has: memory order for a Fortran-contiguous
    array (as mpi4py sends it), C order for every other."""
    return "F" if view.flags.f_contiguous and not view.flags.c_contiguous else "C"


@settings(max_examples=150, deadline=None)
@given(strided_arrays())
def test_a_strided_array_packs_its_elements_and_unpacks_them_in_place(arrays):
    base, view = arrays
    spec = parse_buffer(view)
    assert spec.count == view.size and spec.nbytes == view.nbytes
    assert bytes(spec.packed()) == view.tobytes(order=_order(view))
    target = np.zeros_like(base)
    into = _view_like(target, base, view)
    receive = parse_buffer(into, readonly=False)
    data = np.arange(view.size, dtype=view.dtype) + 7
    if receive.convertor is None:
        receive.view[:] = memoryview(data).cast("B")
    else:
        receive.convertor.unpack_all(memoryview(data).cast("B"))
    assert np.array_equal(into, data.reshape(view.shape, order=_order(view)))
    untouched = np.ones(target.shape, bool)
    _view_like(untouched, base, view)[...] = False
    assert not target[untouched].any()


def _view_like(array: np.ndarray, base: np.ndarray, view: np.ndarray) -> np.ndarray:
    """The view of ``array`` that ``view`` is of ``base`` (same offset, shape and strides)."""
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    start = array.reshape(-1)[offset // base.itemsize :]
    strides = tuple(stride // base.itemsize * array.itemsize for stride in view.strides)
    return np.lib.stride_tricks.as_strided(start, view.shape, strides)


def test_a_contiguous_derived_layout_keeps_the_zero_copy_view():
    block = DOUBLE.Create_contiguous(4).Commit()
    data = np.arange(12.0)
    spec = parse_buffer([data, 2, block])
    assert spec.convertor is None and spec.view.obj is not None
    assert np.frombuffer(spec.view, "d").tolist() == list(range(8))
    data[0] = 99.0  # the view is the array's own memory
    assert np.frombuffer(spec.view, "d")[0] == 99.0


def test_a_vector_layout_goes_through_a_convertor():
    data = np.arange(20.0)
    spec = parse_buffer([data, 3, VECTOR])
    assert spec.convertor is not None and spec.nbytes == 3 * 3 * 8
    assert np.frombuffer(spec.packed(), "d").tolist() == data[vector_mask(3, 20)].tolist()


def test_bad_datatypes_are_clear_mpi_errors():
    data = np.zeros(40)
    uncommitted = DOUBLE.Create_vector(2, 1, 3)
    cls, text = error_class(parse_buffer, [data, 1, uncommitted])
    assert cls == errors.ERR_TYPE and "not committed" in text and "Commit()" in text
    freed = DOUBLE.Create_vector(2, 1, 3).Commit()
    alias = freed.Dup()
    freed.Free()
    cls, text = error_class(parse_buffer, [data, 1, freed])
    assert cls == errors.ERR_TYPE
    alias.Free()
    cls, _ = error_class(parse_buffer, [data, -2, VECTOR])
    assert cls == errors.ERR_COUNT
    overlapping = DOUBLE.Create_hindexed([1, 1], [0, 0]).Commit()
    assert parse_buffer([data, 1, overlapping]).nbytes == 16  # sending it is fine
    cls, text = error_class(lambda: parse_buffer([data, 1, overlapping], readonly=False))
    assert cls == errors.ERR_TYPE and "overlaps" in text
    shrunk = DOUBLE.Create_resized(0, 4).Commit()  # elements overlap one another
    cls, _ = error_class(lambda: parse_buffer([data, 3, shrunk], readonly=False))
    assert cls == errors.ERR_TYPE
    with pytest.raises(ValueError, match="does not fit"):
        parse_buffer([np.zeros(10), 3, VECTOR])


def test_strided_buffers_refuse_what_they_cannot_mean():
    data = np.arange(10.0)
    with pytest.raises(TypeError, match="element type MPI_DOUBLE"):
        parse_buffer([data[::2], INT])
    with pytest.raises(ValueError, match="count"):
        parse_buffer([data[::2], 2, DOUBLE])
    frozen = data[::2]
    frozen.flags.writeable = False
    with pytest.raises(ReadOnlyBufferError):
        parse_buffer(frozen, readonly=False)
    repeated = np.lib.stride_tricks.as_strided(np.zeros(4), (3,), (0,))
    cls, text = error_class(lambda: parse_buffer(repeated, readonly=False))
    assert cls == errors.ERR_TYPE and "more than once" in text


# -- point-to-point ------------------------------------------------------------------------------


@pytest.fixture
def pair():
    return make_world(2)


def test_send_and_receive_derived_layouts_and_strided_arrays(pair):
    def body(comm):
        if comm.rank == 0:
            data = np.arange(20.0)
            comm.Send([data, 3, VECTOR], 1, 1)
            comm.Send(np.arange(24.0).reshape(4, 6)[:, 1], 1, 2)
            comm.Ssend([data, 2, VECTOR], 1, 3)
            request = comm.Isend(data[::-3], 1, 4)
            request.Wait()
            return None
        out = np.full(20, -1.0)
        status = Status()
        comm.Recv([out, 3, VECTOR], 0, 1, status)
        mask = vector_mask(3, 20)
        assert out[mask].tolist() == np.arange(20.0)[mask].tolist() and (out[~mask] == -1).all()
        assert status.Get_count(VECTOR) == 3 and status.Get_elements(DOUBLE) == 9
        grid = np.zeros((4, 3))
        comm.Recv(grid[:, 2], 0, 2)
        assert grid[:, 2].tolist() == [1.0, 7.0, 13.0, 19.0] and not grid[:, :2].any()
        partial = np.full(20, -1.0)
        comm.Recv([partial, 3, VECTOR], 0, 3, status)  # 2 of 3 elements arrive
        assert status.Get_count(VECTOR) == 2 and status.Get_elements(DOUBLE) == 6
        assert partial[vector_mask(2, 20)].tolist() == np.arange(20.0)[vector_mask(2, 20)].tolist()
        backwards = np.zeros(7)
        comm.Irecv(backwards[::-1], 0, 4).Wait()
        assert backwards[::-1].tolist() == np.arange(20.0)[::-3].tolist()
        return None

    run_ranks(pair, body)


def test_partial_receive_counts_elements_exactly(pair):
    struct = type(DOUBLE).Create_struct([1, 2], [0, 8], [DOUBLE, SHORT]).Commit()

    def body(comm):
        if comm.rank == 0:
            comm.Send([np.zeros(8 + 2, "u1"), 10, "B"], 1, 1)  # a double and one short
            comm.Send([np.zeros(9, "u1"), 9, "B"], 1, 2)  # ends inside the first short
            return None
        status = Status()
        out = np.zeros(64, "u1")
        comm.Recv([out, 2, struct], 0, 1, status)
        assert status.Get_elements(struct) == 2 and status.Get_count(struct) < 0
        comm.Recv([out, 2, struct], 0, 2, status)
        assert status.Get_elements(struct) < 0  # MPI.UNDEFINED: not whole basic elements
        return None

    run_ranks(pair, body)


def test_sendrecv_replace_and_buffered_sends_copy_the_packed_stream(pair):
    def body(comm):
        other = 1 - comm.rank
        data = np.arange(20.0) + 100 * comm.rank
        comm.Sendrecv_replace([data, 3, VECTOR], other, 5, other, 5)
        mask = vector_mask(3, 20)
        assert data[mask].tolist() == (np.arange(20.0) + 100 * other)[mask].tolist()
        assert data[~mask].tolist() == (np.arange(20.0) + 100 * comm.rank)[~mask].tolist()

    run_ranks(pair, body)


# -- collectives ---------------------------------------------------------------------------------


@pytest.fixture
def trio():
    return make_world(3)


def test_collectives_move_derived_layouts(trio):
    def body(comm):
        rank, size = comm.rank, comm.size
        mask = vector_mask(2, 10)
        data = np.arange(10.0) if rank == 1 else np.full(10, -1.0)
        comm.Bcast([data, 2, VECTOR], root=1)
        assert data[mask].tolist() == np.arange(10.0)[mask].tolist()
        assert (data[~mask] == (np.arange(10.0)[~mask] if rank == 1 else -1)).all()
        mine = np.full(5, float(rank))
        gathered = np.full(5 * size, -1.0)
        comm.Gather([mine, 1, VECTOR], [gathered, 1, VECTOR] if rank == 0 else None, root=0)
        if rank == 0:
            assert gathered[vector_mask(3, 15)].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
        everyone = np.full(5 * size, -1.0)
        comm.Iallgather([mine, 1, VECTOR], [everyone, 1, VECTOR]).Wait()
        assert everyone[vector_mask(3, 15)].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
        assert (everyone[~vector_mask(3, 15)] == -1).all()
        source = np.arange(5.0 * size) + 10 * rank
        got = np.zeros(5 * size)
        comm.Alltoall([source, 1, VECTOR], [got, 1, VECTOR])
        for peer in range(size):
            expect = (np.arange(5.0 * size) + 10 * peer)[rank * 5 : rank * 5 + 5 : 2]
            assert got[peer * 5 : peer * 5 + 5 : 2].tolist() == expect.tolist()
        piece = np.zeros(5)
        comm.Scatter([np.arange(15.0), 1, VECTOR] if rank == 2 else None, [piece, 1, VECTOR], 2)
        assert piece[::2].tolist() == np.arange(15.0)[rank * 5 : rank * 5 + 5 : 2].tolist()
        column = np.zeros((3, 4))
        comm.Bcast(column[:, 1] if rank else np.array([1.0, 2.0, 3.0]), root=0)
        if rank:
            assert column[:, 1].tolist() == [1.0, 2.0, 3.0] and not column[:, [0, 2, 3]].any()

    run_ranks(trio, body)


def test_reductions_on_single_kind_derived_types(trio):
    def body(comm):
        rank, size = comm.rank, comm.size
        total = sum(range(1, size + 1))
        mask = vector_mask(2, 10)
        mine = np.arange(10.0) * (rank + 1)
        out = np.full(10, -1.0)
        comm.Allreduce([mine, 2, VECTOR], [out, 2, VECTOR], SUM)
        assert out[mask].tolist() == (np.arange(10.0) * total)[mask].tolist()
        assert (out[~mask] == -1).all()
        inplace = np.arange(10.0) * (rank + 1)
        comm.Iallreduce(IN_PLACE, [inplace, 2, VECTOR], MAX).Wait()
        assert inplace[mask].tolist() == (np.arange(10.0) * size)[mask].tolist()
        scanned = np.zeros(10)
        comm.Scan([mine, 2, VECTOR], [scanned, 2, VECTOR], SUM)
        assert scanned[mask].tolist() == (np.arange(10.0) * sum(range(1, rank + 2)))[mask].tolist()
        rooted = np.zeros(10)
        comm.Reduce([mine, 2, VECTOR], [rooted, 2, VECTOR] if rank == 1 else None, SUM, root=1)
        if rank == 1:
            assert rooted[mask].tolist() == (np.arange(10.0) * total)[mask].tolist()
        blocks = np.arange(5.0 * size) * (rank + 1)
        block = np.zeros(5)
        comm.Reduce_scatter_block([blocks, VECTOR], [block, 1, VECTOR], SUM)
        expect = (np.arange(5.0 * size) * total)[rank * 5 : rank * 5 + 5 : 2]
        assert block[::2].tolist() == expect.tolist()
        strided = np.arange(12.0).reshape(3, 4)[:, 1] * (rank + 1)
        result = np.zeros((3, 2))
        comm.Allreduce(strided, result[:, 0], SUM)
        assert result[:, 0].tolist() == (np.arange(12.0).reshape(3, 4)[:, 1] * total).tolist()
        pairs = np.zeros(3, dtype=DOUBLE_INT.dtype)
        pairs["value"], pairs["index"] = [rank, -rank, 5], rank
        low = np.zeros_like(pairs)
        comm.Allreduce([pairs, DOUBLE_INT], [low, DOUBLE_INT], MINLOC)
        assert low["value"].tolist() == [0, -(size - 1), 5]
        assert low["index"].tolist() == [0, size - 1, 0]
        mixed = DOUBLE.Create_struct([1, 1], [0, 8], [DOUBLE, FLOAT]).Commit()
        cls, text = error_class(
            comm.Allreduce, [np.zeros(16, "u1"), 1, mixed], [np.zeros(16, "u1"), 1, mixed]
        )
        assert cls == errors.ERR_OP and "one predefined element type" in text

    run_ranks(trio, body)


def test_vector_and_w_collectives_take_derived_types(trio):
    def body(comm):
        rank, size = comm.rank, comm.size
        uncommitted = DOUBLE.Create_vector(2, 1, 2)
        cls, text = error_class(
            comm.Allgatherv,
            [np.zeros(5), 1, VECTOR],
            [np.zeros(30), ([1] * size, None), uncommitted],
        )
        assert cls == errors.ERR_TYPE and "Comm.Allgatherv: recvbuf" in text
        assert "derived datatype is not committed" in text
        counts = [1, 2, 1]
        displs = [0, 1, 3]
        mine = np.full(5 * counts[rank], float(rank))
        table = np.full(5 * 4, -1.0)
        comm.Allgatherv([mine, counts[rank], VECTOR], [table, (counts, displs), VECTOR])
        assert table[vector_mask(4, 20)].tolist() == [0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2]
        assert (table[~vector_mask(4, 20)] == -1).all()
        outgoing = np.arange(5.0 * size) + 10 * rank
        incoming = np.full(5 * size, -1.0)
        comm.Alltoallw(
            [outgoing, [1] * size, [40 * p for p in range(size)], [VECTOR] * size],
            [incoming, [1] * size, [40 * p for p in range(size)], [VECTOR] * size],
        )
        for peer in range(size):
            expect = (np.arange(5.0 * size) + 10 * peer)[rank * 5 : rank * 5 + 5 : 2]
            assert incoming[peer * 5 : peer * 5 + 5 : 2].tolist() == expect.tolist()
        assert (incoming[~vector_mask(size, 5 * size)] == -1).all()

    run_ranks(trio, body)


def test_absolute_addresses_with_bottom(pair):
    from ompy.ompi.api.memory import Get_address  # the MPI.Get_address function
    from ompy.ompi.constants import BOTTOM

    def body(comm):
        # Two arrays in one allocation, so that their addresses are close together (see the
        # report: a struct of far-apart addresses has an extent numpy's void dtype refuses).
        memory = np.zeros(64, np.uint8)
        values = memory[:32].view("d")
        flags = memory[40:52].view("i")
        values[:] = np.arange(4.0) + comm.rank
        flags[:] = np.arange(3, dtype="i") + 10 * comm.rank
        where = [Get_address(values), Get_address(flags)]
        both = type(DOUBLE).Create_struct([4, 3], where, [DOUBLE, INT]).Commit()
        if comm.rank == 0:
            comm.Send([BOTTOM, 1, both], 1, 9)
        else:
            values[:] = flags[:] = 0
            comm.Recv([BOTTOM, 1, both], 0, 9)
            assert values.tolist() == [0.0, 1.0, 2.0, 3.0] and flags.tolist() == [0, 1, 2]
        with pytest.raises(ValueError, match="Get_address"):
            parse_buffer([BOTTOM, (2, 1), DOUBLE])  # a displacement from address 0: refused

    run_ranks(pair, body)


def test_reductions_on_derived_types_of_pairs(trio):
    pairs2 = DOUBLE_INT.Create_contiguous(2).Commit()
    spaced = DOUBLE_INT.Create_vector(2, 1, 2).Commit()  # every other pair

    def body(comm):
        rank, size = comm.rank, comm.size
        mine = np.zeros(4, dtype=DOUBLE_INT.dtype)
        mine["value"], mine["index"] = [rank, -rank, 2.0, 10 - rank], rank
        low = np.zeros_like(mine)
        comm.Allreduce([mine, 2, pairs2], [low, 2, pairs2], MINLOC)
        assert low["value"].tolist() == [0, -(size - 1), 2.0, 10 - (size - 1)]
        assert low["index"].tolist() == [0, size - 1, 0, size - 1]
        every_other = np.zeros(4, dtype=DOUBLE_INT.dtype)
        every_other["value"] = -7
        comm.Allreduce([mine, 1, spaced], [every_other, 1, spaced], MINLOC)
        assert every_other["value"].tolist() == [0, -7, 2.0, -7]
        assert every_other["index"].tolist() == [0, 0, 0, 0]

    run_ranks(trio, body)


@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_pair_reductions_read_padded_pairs_whatever_the_count(trio, count):
    """One pair's data is a single block (no convertor), yet the kernels read it padded."""

    def body(comm):
        rank = comm.rank
        mine = np.zeros(count, dtype=DOUBLE_INT.dtype)
        mine["value"], mine["index"] = np.arange(count) + rank, rank
        high = np.zeros_like(mine)
        comm.Allreduce([mine, DOUBLE_INT], [high, DOUBLE_INT], MAXLOC)
        assert high["value"].tolist() == (np.arange(count) + comm.size - 1).tolist()
        assert high["index"].tolist() == [comm.size - 1] * count

    run_ranks(trio, body)
