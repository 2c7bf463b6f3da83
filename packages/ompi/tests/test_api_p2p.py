"""Point-to-point through the API against the loopback PML: arguments, statuses, modes."""

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.comm import COMM_NULL
from ompy.ompi.api.message import MESSAGE_NO_PROC, MESSAGE_NULL
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import (
    ANY_SOURCE,
    ANY_TAG,
    BSEND_OVERHEAD,
    PROC_NULL,
    TAG_UB_VALUE,
)
from ompy.ompi.datatype.predefined import DOUBLE, INT
from ompy.ompi.status import Status


def error_class(call, *args, **kwargs):
    with pytest.raises(errors.Exception) as info:
        call(*args, **kwargs)
    return info.value.Get_error_class(), str(info.value)


@pytest.fixture
def pair():
    return make_world(2)


def test_bad_ranks_and_tags_raise_mpi_errors_that_say_what_was_wrong(pair):
    comm = pair[0]
    buf = np.zeros(2)
    cls, text = error_class(comm.Send, buf, 2)
    assert cls == errors.ERR_RANK and "destination rank 2" in text and "size 2" in text
    assert error_class(comm.Send, buf, ANY_SOURCE)[0] == errors.ERR_RANK
    assert error_class(comm.Isend, buf, -7)[0] == errors.ERR_RANK
    assert error_class(comm.Recv, buf, 5)[0] == errors.ERR_RANK
    cls, text = error_class(comm.Send, buf, 1, -3)
    assert cls == errors.ERR_TAG and "tag -3" in text
    assert error_class(comm.Send, buf, 1, ANY_TAG)[0] == errors.ERR_TAG
    assert error_class(comm.Send, buf, 1, TAG_UB_VALUE + 1)[0] == errors.ERR_TAG
    assert error_class(comm.Recv, buf, 1, -5)[0] == errors.ERR_TAG
    assert error_class(comm.Irecv, buf, 0, -2)[0] == errors.ERR_TAG
    assert error_class(comm.send, "x", 3)[0] == errors.ERR_RANK
    assert error_class(comm.recv, None, 0, -9)[0] == errors.ERR_TAG
    assert error_class(comm.Send, [buf, -1, DOUBLE], 1)[0] == errors.ERR_COUNT
    with pytest.raises(TypeError, match="dest must be an int"):
        comm.Send(buf, "1")
    assert error_class(COMM_NULL.Send, buf, 0)[0] == errors.ERR_COMM


def test_numpy_integers_are_accepted_as_ranks_and_tags(pair):
    def body(comm):
        if comm.rank == 0:
            comm.Send(np.arange(3.0), np.int64(1), np.int32(4))
            return None
        out = np.zeros(3)
        status = Status()
        comm.Recv(out, np.int16(0), np.int64(4), status)
        return out.tolist(), status.Get_tag()

    assert run_ranks(pair, body)[1] == ([0.0, 1.0, 2.0], 4)


def test_status_reports_source_tag_and_count_in_elements(pair):
    def body(comm):
        if comm.rank == 0:
            comm.Send([np.arange(5, dtype="i"), 3, INT], 1, 9)
            return None
        out = np.full(5, -1, dtype="i")
        status = Status()
        comm.Recv(out, ANY_SOURCE, ANY_TAG, status)
        return (out.tolist(), status.source, status.tag, status.Get_count(INT), status.count)

    assert run_ranks(pair, body)[1] == ([0, 1, 2, -1, -1], 0, 9, 3, 12)


def test_truncation_raises_err_truncate_and_fills_the_status(pair):
    def body(comm):
        if comm.rank == 0:
            comm.Send(np.arange(8.0), 1, 1)
            return None
        status = Status()
        cls, text = error_class(comm.Recv, np.zeros(4), 0, 1, status)
        return cls, status.source, status.tag, "64 bytes" in text

    assert run_ranks(pair, body)[1] == (errors.ERR_TRUNCATE, 0, 1, True)


def test_proc_null_completes_at_once_with_the_proc_null_status(pair):
    comm = pair[0]
    comm.Send(np.zeros(1), PROC_NULL)
    comm.send({"ignored": 1}, PROC_NULL)
    status = Status()
    comm.Recv(np.zeros(1), PROC_NULL, 5, status)
    assert (status.source, status.tag, status.count) == (PROC_NULL, ANY_TAG, 0)
    assert comm.recv(source=PROC_NULL) is None
    request = comm.Irecv(np.zeros(1), PROC_NULL)
    assert request.Test(status) and status.source == PROC_NULL
    assert comm.Iprobe(PROC_NULL, status=status) and status.source == PROC_NULL
    message = comm.Mprobe(PROC_NULL)
    assert message == MESSAGE_NO_PROC
    message.Recv(np.zeros(1), status)
    assert status.source == PROC_NULL and message == MESSAGE_NO_PROC  # stays NO_PROC
    assert comm.Sendrecv(np.zeros(1), PROC_NULL, 0, np.zeros(1), PROC_NULL) is None


def test_probe_does_not_consume_and_mprobe_takes_the_message_out_of_matching(pair):
    def body(comm):
        if comm.rank == 0:
            comm.Send(np.arange(4, dtype="i"), 1, 3)
            comm.Send(np.arange(2, dtype="i"), 1, 4)
            return None
        status = Status()
        comm.Probe(0, 3, status)
        assert status.Get_count(INT) == 4
        assert comm.Iprobe(0, 3)  # still there
        message = comm.Mprobe(ANY_SOURCE, ANY_TAG, status)
        assert (status.tag, status.Get_count(INT)) == (3, 4)
        assert comm.Iprobe(0, 3) is False  # taken out of matching
        out = np.zeros(4, "i")
        message.Recv(out)
        assert message == MESSAGE_NULL
        assert error_class(message.Recv, out)[0] == errors.ERR_REQUEST
        assert comm.Improbe(0, 99) is None
        second = comm.Improbe(0, 4)
        out[:] = -1
        request = second.Irecv(out[:2])
        request.Wait(status)
        return out.tolist(), status.tag

    assert run_ranks(pair, body)[1] == ([0, 1, -1, -1], 4)


def test_messages_from_one_sender_match_in_order_even_with_wildcards(pair):
    def body(comm):
        if comm.rank == 0:
            for value in range(6):
                comm.Send(np.array([value], "i"), 1, value % 2)
            return None
        out = np.zeros(1, "i")
        first_tag1 = []
        comm.Recv(out, 0, 1)
        first_tag1.append(int(out[0]))
        rest = []
        for _ in range(5):
            comm.Recv(out, ANY_SOURCE, ANY_TAG)
            rest.append(int(out[0]))
        return first_tag1, rest

    assert run_ranks(pair, body)[1] == ([1], [0, 2, 3, 4, 5])


def test_synchronous_ready_and_sendrecv_modes(pair):
    def body(comm):
        peer = 1 - comm.rank
        got = np.zeros(3)
        comm.Sendrecv(np.full(3, comm.rank + 1.0), peer, 2, got, peer, 2)
        replaced = np.full(2, 10.0 * comm.rank)
        comm.Sendrecv_replace(replaced, peer, 3, peer, 3)
        if comm.rank == 0:
            comm.Ssend(np.ones(1), 1, 5)
            comm.Rsend(np.ones(1), 1, 6)
            request = comm.Issend(np.ones(1), 1, 7)
            request.Wait()
        else:
            for tag in (5, 6, 7):
                comm.Recv(np.zeros(1), 0, tag)
        return got.tolist(), replaced.tolist()

    first, second = run_ranks(pair, body)
    assert first == ([2.0] * 3, [10.0, 10.0])
    assert second == ([1.0] * 3, [0.0, 0.0])


def test_buffered_sends_use_the_attached_buffer_and_need_room_for_the_overhead(pair):
    comm = pair[0]
    pool = comm._c.instance.bsend
    cls, text = error_class(comm.Bsend, np.zeros(4), 1)
    assert cls == errors.ERR_BUFFER and "Attach_buffer" in text
    space = bytearray(32 + BSEND_OVERHEAD)
    pool.attach(space)
    assert error_class(pool.attach, bytearray(8))[0] == errors.ERR_BUFFER
    comm.Bsend(np.arange(4.0), 1, 1)  # 32 bytes: fits exactly, and is released when sent
    comm.Ibsend(np.arange(4.0), 1, 2).Wait()
    cls, text = error_class(comm.Bsend, np.arange(5.0), 1, 3)
    assert cls == errors.ERR_BUFFER and "40 bytes" in text
    assert pool.detach() is space
    pool.attach(None)  # BUFFER_AUTOMATIC: the library allocates the copies
    comm.bsend("small object", 1, 4)
    pool.detach()
    out = np.zeros(4)
    pair[1].Recv(out, 0, 1)
    pair[1].Recv(out, 0, 2)
    assert out.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert pair[1].recv(source=0, tag=4) == "small object"


def test_cancel_of_a_pending_receive(pair):
    comm = pair[1]
    request = comm.Irecv(np.zeros(1), 0, 8)
    request.Cancel()
    status = Status()
    request.Wait(status)
    assert status.Is_cancelled()
    lowercase = comm.irecv(source=0, tag=9)
    lowercase.cancel()
    assert lowercase.wait(status) is None and status.Is_cancelled()
    pair[0].Send(np.ones(1), 1, 8)  # the cancelled receive does not take it
    assert comm.Iprobe(0, 8)


def test_readonly_receive_buffer_is_refused(pair):
    with pytest.raises(BufferError, match="read-only"):
        pair[0].Recv(b"immutable", 1)
