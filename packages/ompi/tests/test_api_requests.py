"""Requests: handles that become REQUEST_NULL, the many-request waits, persistent requests."""

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.request import REQUEST_NULL, Prequest, Request
from ompy.ompi.api.testing import make_world
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED
from ompy.ompi.status import Status


@pytest.fixture
def pair():
    return make_world(2)


def test_a_completed_request_becomes_request_null_in_place(pair):
    sender, receiver = pair
    out = np.zeros(2)
    request = receiver.Irecv(out, 0, 1)
    assert request and request != REQUEST_NULL
    assert request.Test() is False
    assert request.Get_status() is False
    sender.Send(np.ones(2), 1, 1)
    status = Status()
    assert request.Get_status(status) is True and request  # non-destructive
    assert request.Wait(status) is True
    assert not request and request == REQUEST_NULL
    assert (status.source, status.tag, status.count) == (0, 1, 16)
    assert request.Wait(status) is True  # a null request: the empty status
    assert (status.source, status.tag, status.count) == (ANY_SOURCE, ANY_TAG, 0)
    with pytest.raises(errors.Exception) as info:
        request.Free()
    assert info.value.Get_error_class() == errors.ERR_REQUEST


def test_waitany_skips_null_requests_and_reports_undefined_when_all_are_null(pair):
    sender, receiver = pair
    buffers = [np.zeros(1) for _ in range(3)]
    requests = [REQUEST_NULL, receiver.Irecv(buffers[1], 0, 11), receiver.Irecv(buffers[2], 0, 12)]
    sender.Send(np.array([12.0]), 1, 12)
    status = Status()
    assert Request.Waitany(requests, status) == 2
    assert status.tag == 12 and requests[2] == REQUEST_NULL
    assert Request.Testany(requests) == (UNDEFINED, False)
    sender.Send(np.array([11.0]), 1, 11)
    assert Request.Waitany(requests) == 1
    assert Request.Waitany(requests, status) == UNDEFINED
    assert status.source == ANY_SOURCE
    assert Request.Testany(requests) == (UNDEFINED, True)
    assert Request.Waitsome(requests) is None and Request.Testsome(requests) is None
    assert [b[0] for b in buffers] == [0.0, 11.0, 12.0]


def test_testsome_waitsome_testall_waitall_with_statuses(pair):
    sender, receiver = pair
    requests = [receiver.Irecv(np.zeros(1), 0, tag) for tag in range(4)]
    assert Request.Testsome(requests) == []
    assert Request.Testall(requests) is False
    sender.Send(np.zeros(1), 1, 1)
    sender.Send(np.zeros(1), 1, 3)
    statuses = []
    assert Request.Testsome(requests, statuses) == [1, 3]
    assert [s.tag for s in statuses] == [1, 3]
    sender.Send(np.zeros(1), 1, 2)
    assert Request.Waitsome(requests) == [2]
    sender.Send(np.zeros(1), 1, 0)
    statuses = [Status()]
    assert Request.Waitall(requests, statuses) is True
    assert len(statuses) == 4 and statuses[0].tag == 0 and statuses[1].source == ANY_SOURCE
    assert all(request == REQUEST_NULL for request in requests)


def test_lowercase_waits_return_the_received_objects(pair):
    sender, receiver = pair
    requests = [receiver.irecv(source=0, tag=t) for t in range(3)]
    for tag in (2, 0, 1):
        sender.isend({"tag": tag}, 1, tag).wait()
    flag, obj = requests[0].test()
    assert flag and obj == {"tag": 0}
    index, obj = Request.waitany(requests)
    assert (index, obj) == (1, {"tag": 1})
    assert Request.waitall(requests) == [None, None, {"tag": 2}]
    more = [receiver.irecv(source=0, tag=5), REQUEST_NULL]
    assert Request.testall(more) == (False, None)
    assert Request.testsome(more) == ([], [])
    sender.send([1, 2], 1, 5)
    assert Request.testany(more) == (0, True, [1, 2])
    assert Request.waitsome(more) == (None, None)


def test_a_failed_request_raises_from_every_wait_after_the_others_complete(pair):
    sender, receiver = pair
    ok, short = receiver.Irecv(np.zeros(1), 0, 1), receiver.Irecv(np.zeros(1), 0, 2)
    sender.Send(np.zeros(1), 1, 1)
    sender.Send(np.zeros(3), 1, 2)
    statuses = []
    with pytest.raises(errors.Exception) as info:
        Request.Waitall([ok, short], statuses)
    assert info.value.Get_error_class() == errors.ERR_TRUNCATE
    assert ok == REQUEST_NULL and short == REQUEST_NULL
    assert statuses[1].error == errors.ERR_TRUNCATE


def test_persistent_requests_restart_and_stay_valid(pair):
    sender, receiver = pair
    value = np.zeros(1, "i")
    out = np.zeros(1, "i")
    send = sender.Send_init(value, 1, 4)
    recv = receiver.Recv_init(out, 0, 4)
    assert isinstance(send, Prequest) and send and recv
    assert recv.Test() is True  # inactive: complete with an empty status
    seen = []
    for round_ in range(3):
        value[0] = round_ * 10
        Prequest.Startall([recv, send])
        with pytest.raises(errors.Exception) as info:
            recv.Start()
        assert info.value.Get_error_class() == errors.ERR_REQUEST
        Request.Waitall([send, recv])
        assert send and recv and send != REQUEST_NULL  # inactive, not null
        seen.append(int(out[0]))
    assert seen == [0, 10, 20]
    for mode in (sender.Ssend_init, sender.Bsend_init, sender.Rsend_init):
        assert isinstance(mode(value, PROC_NULL), Prequest)
    send.Free()
    assert not send and send == REQUEST_NULL
    with pytest.raises(errors.Exception):
        send.Start()
    with pytest.raises(TypeError, match="Prequest"):
        Prequest.Startall([recv, Request()])


def test_every_test_of_a_pending_request_makes_one_progress_pass(pair):
    # MPI requires tests to progress: `while not request.Test(): pass` must be able to finish
    # for operations (nonblocking collectives, rendezvous) that only advance in progress calls.
    _sender, receiver = pair
    engine = receiver._c.engine
    passes = []

    def counted() -> int:
        passes.append(1)
        return 0

    request = receiver.Irecv(np.zeros(1), 0, 5)
    engine.register(counted)
    try:
        assert request.Test() is False
        assert request.test() == (False, None)
        assert request.Get_status() is False
        assert Request.Testany([request]) == (UNDEFINED, False)
        assert Request.Testall([request]) is False
        assert Request.Testsome([request]) == []
        assert len(passes) == 6
        request.Cancel()
        request.Wait()
        passes.clear()
        assert Request.Testall([request]) is True  # nothing pending: no pass needed
        assert passes == []
    finally:
        engine.unregister(counted)
