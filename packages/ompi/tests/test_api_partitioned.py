"""Partitioned point-to-point (``Psend_init``, ``Precv_init``, ``Pready*``, ``Parrived``)
against the loopback PML: rounds, partial arrival, matching order, layouts and every error."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.request import Prequest
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ompy.ompi.datatype.predefined import DOUBLE, INT
from ompy.ompi.status import Status


def mpi_error(call, *args):
    with pytest.raises(errors.Exception) as info:
        call(*args)
    return info.value.Get_error_class(), str(info.value)


def wait_arrived(request, partition):
    while not request.Parrived(partition):
        pass


def test_a_ring_moves_every_round_and_partitions_arrive_one_by_one():
    def body(comm):
        rank, size = comm.Get_rank(), comm.Get_size()
        dest, source = (rank + 1) % size, (rank - 1) % size
        sbuf = np.zeros(12, "i")
        rbuf = np.full(12, -1, "i")
        send = comm.Psend_init(sbuf, 3, dest, 5)
        recv = comm.Precv_init(rbuf, 3, source, 5)
        assert isinstance(send, Prequest) and isinstance(recv, Prequest)
        for round_ in range(4):
            sbuf[:] = 100 * round_ + rank
            comm.Barrier()
            recv.Start()
            assert not any(recv.Parrived(i) for i in range(3))
            comm.Barrier()
            send.Start()
            send.Pready(0)
            comm.Barrier()  # only partition 0 is ready everywhere
            wait_arrived(recv, 0)
            assert (rbuf[:4] == 100 * round_ + source).all()
            assert not recv.Parrived(1) and not recv.Parrived(2)
            comm.Barrier()  # every rank looked before the rest is marked ready
            send.Pready_range(1, 2)
            status = Status()
            recv.Wait(status)
            send.Wait()
            assert (rbuf == 100 * round_ + source).all()
            assert status.Get_source() == source and status.Get_tag() == 5
            assert status.Get_count(INT) == 12
            assert recv.Parrived(2)  # inactive: the round's data is all there
            comm.Barrier()
        send.Free()
        recv.Free()
        assert not send and not recv
        return True

    assert run_ranks(make_world(3), body) == [True] * 3


def test_partitions_leave_in_order_so_a_later_one_waits_for_those_before_it():
    def body(comm):
        sbuf, rbuf = np.arange(6.0), np.zeros(6)
        send = comm.Psend_init(sbuf, 3, 0, 1)
        recv = comm.Precv_init(rbuf, 3, 0, 1)
        recv.Start()
        send.Start()
        send.Pready_list([2, 1])
        for _ in range(20):
            assert not recv.Parrived(1) and not recv.Parrived(2)
        send.Pready(0)
        for partition in range(3):
            wait_arrived(recv, partition)
        recv.Wait()
        send.Wait()
        return rbuf.tolist()

    assert run_ranks(make_world(1), body) == [list(np.arange(6.0))]


@pytest.mark.parametrize(
    ("send_parts", "recv_parts"), [(4, 2), (2, 4), (3, 1), (1, 6), (3, 2), (2, 3)]
)
def test_the_two_sides_may_cut_the_same_bytes_differently(send_parts, recv_parts):
    def body(comm):
        rank = comm.Get_rank()
        if rank == 0:
            data = np.arange(12, dtype="i")
            send = comm.Psend_init(data, send_parts, 1, 0)
            comm.Barrier()
            send.Start()
            for partition in range(send_parts):
                send.Pready(partition)
                comm.Barrier()
                comm.Barrier()  # rank 1 looked
            send.Wait()
            return None
        got = np.full(12, -1, "i")
        recv = comm.Precv_init(got, recv_parts, 0, 0)
        recv.Start()
        comm.Barrier()
        seen = []
        piece = 12 // recv_parts
        for ready in range(1, send_parts + 1):
            comm.Barrier()  # send partitions 0..ready-1 are marked ready
            sent_bytes = ready * (48 // send_parts)
            for partition in range(recv_parts):
                complete = (partition + 1) * piece * 4 <= sent_bytes
                if complete:
                    wait_arrived(recv, partition)
                    assert (got[partition * piece : (partition + 1) * piece] >= 0).all()
                else:
                    assert not recv.Parrived(partition)
            seen.append([recv.Parrived(p) for p in range(recv_parts)])
            comm.Barrier()
        recv.Wait()
        assert got.tolist() == list(range(12))
        return seen[-1]

    assert run_ranks(make_world(2), body)[1] == [True] * recv_parts


def test_partitioned_requests_match_in_the_order_they_were_initialized():
    def body(comm):
        if comm.Get_rank() == 0:
            first = comm.Psend_init(np.full(2, 1, "i"), 1, 1, 9)
            second = comm.Psend_init(np.full(2, 2, "i"), 1, 1, 9)
            other_tag = comm.Psend_init(np.full(2, 3, "i"), 2, 1, 4)
            for request in (other_tag, second, first):  # started in the reverse order
                request.Start()
                request.Pready_range(0, 1 if request is other_tag else 0)
            Prequest.Waitall([first, second, other_tag])
            return None
        bufs = [np.zeros(2, "i") for _ in range(3)]
        first = comm.Precv_init(bufs[0], 1, 0, 9)
        second = comm.Precv_init(bufs[1], 2, 0, 9)
        other_tag = comm.Precv_init(bufs[2], 1, 0, 4)
        Prequest.Startall([second, other_tag, first])
        Prequest.Waitall([first, second, other_tag])
        return [b.tolist() for b in bufs]

    assert run_ranks(make_world(2), body)[1] == [[1, 1], [2, 2], [3, 3]]


def test_layouts_and_buffer_forms():
    vector = DOUBLE.Create_vector(4, 1, 2).Commit()
    cases = [  # (send form, send partitions, receive form, receive partitions, receive size)
        # [buf, count, type]: the count is per partition
        (lambda b: [b, 2, DOUBLE], 2, lambda b: [b, 4, DOUBLE], 1, 6),
        (lambda b: [b, 1, vector], 2, lambda b: [b, 4, DOUBLE], 2, 16),
        (lambda b: b[::2], 2, lambda b: b, 2, 8),
        (lambda b: [b, (2, 1), DOUBLE], 2, lambda b: [b, 4, DOUBLE], 1, 12),
    ]

    def body(comm):
        results = []
        for send_form, send_parts, recv_form, recv_parts, size in cases:
            data = np.arange(16, dtype="d") + 1
            out = np.zeros(size)
            send = comm.Psend_init(send_form(data), send_parts, 0, 3)
            recv = comm.Precv_init(recv_form(out), recv_parts, 0, 3)
            recv.Start()
            send.Start()
            send.Pready_range(0, send_parts - 1)
            recv.Wait()
            send.Wait()
            results.append(out.tolist())
            send.Free()
            recv.Free()
        return results

    first, second, third, fourth = run_ranks(make_world(1), body)[0]
    assert first == [1, 2, 3, 4, 0, 0]
    # a vector of 4 strided doubles spans 7 elements: the second starts at element 7
    assert second == [1, 3, 5, 7, 8, 10, 12, 14] + [0] * 8
    assert third == [1, 3, 5, 7, 9, 11, 13, 15]
    assert fourth == [2, 3, 4, 5] + [0] * 8


def test_strided_receive_unpacks_each_partition_as_it_arrives():
    def body(comm):
        data = np.arange(1, 7, dtype="d")
        out = np.zeros(12)
        send = comm.Psend_init(data, 3, 0, 0)
        recv = comm.Precv_init(out[::2], 3, 0, 0)
        recv.Start()
        send.Start()
        send.Pready(0)
        wait_arrived(recv, 0)
        first = out.tolist()
        send.Pready_range(1, 2)
        recv.Wait()
        send.Wait()
        return first, out.tolist()

    first, final = run_ranks(make_world(1), body)[0]
    assert first[:4] == [1, 0, 2, 0] and first[4:] == [0] * 8
    assert final == [1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0]


def test_proc_null_requests_move_nothing():
    comm = make_world(1)[0]
    send = comm.Psend_init(None, 4, PROC_NULL)
    recv = comm.Precv_init(None, 2, PROC_NULL, 0)
    send.Start()
    recv.Start()
    send.Pready_range(0, 3)
    assert recv.Parrived(1)
    status = Status()
    recv.Wait(status)
    send.Wait()
    assert status.Get_source() == PROC_NULL and status.Get_count() == 0


def test_mismatched_byte_totals_fail_both_sides_clearly_and_send_no_data():
    def body(comm):
        if comm.Get_rank() == 0:
            send = comm.Psend_init(np.zeros(8, "i"), 2, 1, 0)
            send.Start()
            send.Pready_range(0, 1)
            cls, text = mpi_error(send.Wait)
            # the pair stays broken: the next round fails at once
            send.Start()
            again = mpi_error(send.Wait)[0]
            small = comm.Psend_init(np.zeros(2, "i"), 1, 1, 1)
            small.Start()
            small.Pready(0)
            small_error = mpi_error(small.Wait)[0]
            return cls, text, again, small_error
        recv = comm.Precv_init(np.zeros(6, "i"), 3, 0, 0)
        recv.Start()
        cls, text = mpi_error(recv.Wait)
        big = comm.Precv_init(np.zeros(4, "i"), 2, 0, 1)
        big.Start()
        big_error = mpi_error(big.Wait)[0]
        assert comm.Iprobe(ANY_SOURCE, ANY_TAG) is False  # no partition was sent
        return cls, text, None, big_error

    sender, receiver = run_ranks(make_world(2), body)
    assert sender[0] == errors.ERR_ARG and sender[2] == errors.ERR_ARG
    assert "32 bytes in 2 partition(s)" in sender[1] and "24 bytes in 3 partition(s)" in sender[1]
    assert receiver[0] == errors.ERR_TRUNCATE
    assert "sends 32 bytes" in receiver[1] and "takes 24 bytes" in receiver[1]
    assert sender[3] == errors.ERR_ARG and receiver[3] == errors.ERR_ARG


def test_bad_partition_numbers_and_misuse_raise_mpi_errors():
    comm = make_world(1)[0]
    send = comm.Psend_init(np.zeros(4), 2, 0, 0)
    recv = comm.Precv_init(np.zeros(4), 2, 0, 0)
    cls, text = mpi_error(send.Pready, 0)
    assert cls == errors.ERR_REQUEST and "Start()" in text
    recv.Start()
    send.Start()
    cls, text = mpi_error(send.Pready, 2)
    assert cls == errors.ERR_ARG and "partition 2 does not exist" in text and "0..1" in text
    assert mpi_error(send.Pready, -1)[0] == errors.ERR_ARG
    assert mpi_error(send.Pready_range, 1, 0)[0] == errors.ERR_ARG
    assert mpi_error(send.Pready_range, 0, 5)[0] == errors.ERR_ARG
    assert mpi_error(send.Pready_list, [0, 7])[0] == errors.ERR_ARG
    assert mpi_error(recv.Parrived, 2)[0] == errors.ERR_ARG
    cls, text = mpi_error(recv.Pready, 0)
    assert cls == errors.ERR_REQUEST and "partitioned receive" in text
    assert mpi_error(send.Parrived, 0)[0] == errors.ERR_REQUEST
    send.Pready(1)
    cls, text = mpi_error(send.Pready_list, [0, 1])
    assert cls == errors.ERR_ARG and "already marked ready" in text
    assert not recv.Parrived(0)  # the failed call marked nothing
    with pytest.raises(TypeError, match="partition must be an int"):
        send.Pready("0")
    send.Pready(0)
    recv.Wait()
    send.Wait()
    plain = comm.Send_init(np.zeros(1), 0)
    assert mpi_error(plain.Pready, 0)[0] == errors.ERR_REQUEST
    assert mpi_error(plain.Parrived, 0)[0] == errors.ERR_REQUEST
    recv.Free()
    assert recv.Parrived(5)  # MPI: true on a null (or inactive) request
    assert Prequest().Parrived(0)
    assert mpi_error(send.Pready, 0)[0] == errors.ERR_REQUEST  # inactive
    send.Free()
    cls, text = mpi_error(send.Pready, 0)
    assert cls == errors.ERR_REQUEST and "REQUEST_NULL" in text


def test_bad_arguments_of_the_init_calls():
    comm = make_world(2)[0]
    buf = np.zeros(6)
    assert mpi_error(comm.Psend_init, buf, 0, 1)[0] == errors.ERR_ARG
    assert mpi_error(comm.Psend_init, buf, 2, 2)[0] == errors.ERR_RANK
    assert mpi_error(comm.Psend_init, buf, 2, 1, -1)[0] == errors.ERR_TAG
    cls, text = mpi_error(comm.Precv_init, buf, 2)
    assert cls == errors.ERR_ARG and "specific source" in text
    cls, text = mpi_error(comm.Precv_init, buf, 2, 1)
    assert cls == errors.ERR_ARG and "specific tag" in text
    with pytest.raises(ValueError, match="not a multiple of 4 partitions"):
        comm.Psend_init(buf, 4, 1)
    with pytest.raises(BufferError):
        comm.Precv_init(b"12345678", 1, 1, 0)
    with pytest.raises(TypeError, match="partitions must be an int"):
        comm.Psend_init(buf, "2", 1)


@settings(max_examples=20, deadline=None)
@given(
    send_parts=st.sampled_from([1, 2, 3, 4, 6, 12]),
    recv_parts=st.sampled_from([1, 2, 3, 4, 6, 12]),
    order=st.permutations(range(12)),
)
def test_any_ready_order_and_any_cutting_deliver_the_message(send_parts, recv_parts, order):
    def body(comm):
        data = np.arange(24, dtype="i")
        out = np.zeros(24, "i")
        send = comm.Psend_init(data, send_parts, 0, 0)
        recv = comm.Precv_init(out, recv_parts, 0, 0)
        recv.Start()
        send.Start()
        for partition in order:
            if partition < send_parts:
                send.Pready(partition)
        recv.Wait()
        send.Wait()
        return out.tolist()

    assert run_ranks(make_world(1), body) == [list(range(24))]
