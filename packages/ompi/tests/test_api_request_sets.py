"""The many-request calls as mpi4py 4.1 defines them, and generalized requests.

- ``requests`` is any sequence (list, tuple); completed requests become ``REQUEST_NULL`` in
  place, null and inactive ones count as complete with the empty status.
- ``statuses``: a list shorter than what is reported is extended; its first ``len(requests)``
  entries are overwritten (with the empty status where nothing was reported).
- ``Get_status_*`` report without releasing anything.
- ``Grequest``: the user's query/free/cancel callbacks, completed by ``Complete``.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api.request import REQUEST_NULL, Grequest, Prequest, Request
from ompy.ompi.api.testing import default_instance, make_world
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from ompy.ompi.datatype.predefined import BYTE
from ompy.ompi.status import Status


@pytest.fixture
def pair():
    return make_world(2)


@pytest.fixture
def instance():
    with default_instance() as instance:
        yield instance


def is_empty(status):
    return (status.source, status.tag, status.error, status.count, status.cancelled) == (
        ANY_SOURCE,
        ANY_TAG,
        errors.SUCCESS,
        0,
        False,
    )


def test_a_tuple_of_requests_is_completed_in_place(pair):
    sender, receiver = pair
    requests = (receiver.Irecv(np.zeros(1), 0, 1), REQUEST_NULL, receiver.Irecv(np.zeros(1), 0, 2))
    sender.Send(np.ones(1), 1, 2)
    sender.Send(np.ones(1), 1, 1)
    statuses = []
    assert Request.Waitall(requests, statuses) is True
    assert all(request == REQUEST_NULL for request in requests)
    assert [s.tag for s in statuses] == [1, ANY_TAG, 2] and is_empty(statuses[1])


def test_requests_must_be_a_sequence_of_requests(pair):
    _sender, receiver = pair
    request = receiver.Irecv(np.zeros(1), 0, 1)
    with pytest.raises(TypeError, match="sequence of Request"):
        Request.Waitall(request for request in [request])
    with pytest.raises(TypeError, match="sequence of Request"):
        Request.Testall([request, 3])
    request.Cancel()
    request.Wait()


def test_statuses_beyond_the_requests_are_left_alone_and_a_tuple_is_not_extended(pair):
    sender, receiver = pair
    spare = Status()
    spare.tag = 99
    statuses = [Status(), Status(), spare]
    request = receiver.Irecv(np.zeros(1), 0, 4)
    sender.Send(np.ones(1), 1, 4)
    Request.Waitall([request, REQUEST_NULL], statuses)
    assert statuses[0].tag == 4 and is_empty(statuses[1]) and statuses[2].tag == 99
    short = (Status(),)
    Request.Waitall([REQUEST_NULL, REQUEST_NULL], short)
    assert len(short) == 1 and is_empty(short[0])


def test_get_status_all_any_some_report_without_releasing(pair):
    sender, receiver = pair
    requests = [receiver.Irecv(np.zeros(1), 0, tag) for tag in (5, 6)]
    statuses = []
    assert Request.Get_status_all(requests, statuses) is False
    assert len(statuses) == 2 and all(is_empty(s) for s in statuses)
    assert Request.Get_status_any(requests) == (UNDEFINED, False)
    assert Request.Get_status_some(requests) == []
    sender.Send(np.ones(1), 1, 6)
    status = Status()
    assert Request.Get_status_any(requests, status) == (1, True) and status.tag == 6
    statuses = []
    assert Request.Get_status_some(requests, statuses) == [1]
    assert statuses[0].tag == 6 and requests[1]  # still active
    sender.Send(np.ones(1), 1, 5)
    statuses = []
    assert Request.get_status_all(requests, statuses) is True
    assert [s.tag for s in statuses] == [5, 6] and all(requests)
    assert Request.get_status_some(requests) == [0, 1]
    assert Request.get_status_any(requests) == (0, True)
    Request.Waitall(requests)
    status.tag = 1
    assert Request.Get_status_any(requests, status) == (UNDEFINED, True) and is_empty(status)
    assert Request.Get_status_some(requests) is None
    assert Request.Get_status_all(requests) is True


def test_inactive_persistent_requests_count_as_null(pair):
    sender, receiver = pair
    recv = receiver.Recv_init(np.zeros(1), 0, 7)
    assert Request.Get_status_any([recv]) == (UNDEFINED, True)
    assert Request.Waitsome([recv, REQUEST_NULL]) is None
    recv.Start()
    sender.Send(np.ones(1), 1, 7)
    assert Request.Waitsome((recv,)) == [0] and recv and isinstance(recv, Prequest)
    recv.Free()


# -- random mixes ------------------------------------------------------------------------------

KINDS = st.lists(st.sampled_from(["done", "null", "pending", "greq"]), min_size=0, max_size=8)


@settings(max_examples=40, deadline=None)
@given(kinds=KINDS, preset=st.integers(0, 10))
def test_waitall_and_testall_over_random_mixes(kinds, preset):
    sender, receiver = make_world(2)
    requests, expected = [], []
    greqs = []
    with default_instance():
        for position, kind in enumerate(kinds):
            if kind == "null":
                requests.append(REQUEST_NULL)
                expected.append(ANY_TAG)
            elif kind == "greq":
                greq = Grequest.Start(lambda status, tag=position: status.Set_tag(100 + tag))
                requests.append(greq)
                greqs.append(greq)
                expected.append(100 + position)
            else:
                requests.append(receiver.Irecv(np.zeros(1), 0, position))
                expected.append(position)
                if kind == "done":
                    sender.Send(np.ones(1), 1, position)
        statuses = [Status() for _ in range(preset)]
        pending = any(kind in ("pending", "greq") for kind in kinds)
        assert Request.Testall(requests, statuses) is (not pending)
        if pending:
            assert all(is_empty(s) for s in statuses[: len(kinds)])
            for position, kind in enumerate(kinds):
                if kind == "pending":
                    sender.Send(np.ones(1), 1, position)
            for greq in greqs:
                greq.Complete()
            assert Request.Waitall(requests, statuses) is True
        assert len(statuses) == max(preset, len(kinds))
        assert [s.tag for s in statuses[: len(kinds)]] == expected
        assert all(request == REQUEST_NULL for request in requests)


@settings(max_examples=30, deadline=None)
@given(kinds=KINDS)
def test_waitsome_and_testsome_report_each_completed_request_once(kinds):
    sender, receiver = make_world(2)
    requests = []
    for position, kind in enumerate(kinds):
        if kind in ("null", "greq"):
            requests.append(REQUEST_NULL)
        else:
            requests.append(receiver.Irecv(np.zeros(1), 0, position))
            if kind == "done":
                sender.Send(np.ones(1), 1, position)
    active = [p for p, kind in enumerate(kinds) if kind in ("done", "pending")]
    done = [p for p, kind in enumerate(kinds) if kind == "done"]
    statuses = []
    got = Request.Testsome(requests, statuses)
    if not active:
        assert got is None and statuses == []
        return
    assert got == done and [s.tag for s in statuses[: len(done)]] == done
    assert all(is_empty(s) for s in statuses[len(done) :])
    for position in active:
        if position not in done:
            sender.Send(np.ones(1), 1, position)
    seen = list(done)
    while (indices := Request.Waitsome(requests)) is not None:
        seen += indices
    assert sorted(seen) == active


# -- generalized requests ----------------------------------------------------------------------


class Callbacks:
    def __init__(self):
        self.calls = []

    def query(self, status, *args, **kwargs):
        self.calls.append(("query", args, kwargs))
        status.Set_source(3)
        status.Set_tag(7)
        status.Set_elements(BYTE, 12)
        status.Set_cancelled(True)

    def free(self, *args, **kwargs):
        self.calls.append(("free", args, kwargs))

    def cancel(self, completed, *args, **kwargs):
        self.calls.append(("cancel", completed))


def test_a_generalized_request_completes_when_the_user_says(instance):
    cb = Callbacks()
    greq = Grequest.Start(cb.query, cb.free, cb.cancel, args=(1,), kwargs={"k": 2})
    assert greq and greq.Test() is False and greq.Get_status() is False
    greq.Cancel()
    greq.Complete()
    greq.Cancel()
    status = Status()
    assert greq.Get_status(status) is True and greq
    assert greq.Test(status) is True and not greq and greq == REQUEST_NULL
    assert (status.source, status.tag, status.count, status.cancelled) == (3, 7, 12, True)
    assert cb.calls == [
        ("cancel", False),
        ("cancel", True),
        ("query", (1,), {"k": 2}),
        ("query", (1,), {"k": 2}),
        ("free", (1,), {"k": 2}),
    ]
    with pytest.raises(errors.Exception) as info:
        greq.Complete()
    assert info.value.Get_error_class() == errors.ERR_REQUEST


def test_without_callbacks_the_status_is_empty_and_cancelled_needs_a_cancel_fn(instance):
    greq = Grequest.Start()
    greq.complete({"answer": 42})
    status = Status()
    assert greq.wait(status) == {"answer": 42} and is_empty(status)
    cb = Callbacks()
    greq = Grequest.Start(cb.query)  # no cancel_fn: never reported cancelled
    greq.Complete()
    greq.Wait(status)
    assert status.source == 3 and not status.cancelled


def test_free_before_complete_runs_free_fn_at_completion(instance):
    cb = Callbacks()
    greq = Grequest.Start(cb.query, cb.free)
    keep = Grequest(greq)
    greq.Free()
    assert not greq and cb.calls == []
    keep.Complete()
    assert [call[0] for call in cb.calls] == ["free"]


def test_callback_errors_become_mpi_exceptions(instance, capsys):
    def broken(*_args):
        raise ValueError("broken")

    def refused(*_args):
        raise errors.Exception(errors.ERR_BUFFER)

    for function, error_class in ((broken, errors.ERR_OTHER), (refused, errors.ERR_BUFFER)):
        greq = Grequest.Start(function)
        greq.Complete()
        with pytest.raises(errors.Exception) as info:
            greq.Wait()
        assert info.value.Get_error_class() == error_class
        greq = Grequest.Start(None, None, function)
        with pytest.raises(errors.Exception):
            greq.Cancel()
        greq.Complete()
        greq.Wait()
    assert "Traceback" in capsys.readouterr().err


def test_grequests_mix_with_point_to_point_in_every_wait(pair, instance):
    sender, receiver = pair
    greq = Grequest.Start(lambda status: status.Set_tag(42))
    recv = receiver.irecv(source=0, tag=1)
    assert Request.testany([greq, recv]) == (UNDEFINED, False, None)
    sender.send("hello", 1, 1)
    assert Request.waitany((greq, recv)) == (1, "hello")
    statuses = []
    greq.complete("done")
    assert Request.waitall([greq, recv], statuses) == ["done", None]
    assert [s.tag for s in statuses] == [42, ANY_TAG]


def test_a_wait_in_another_thread_sees_the_completion(instance):
    import threading

    greq = Grequest.Start()
    threading.Timer(0.05, greq.Complete).start()
    assert greq.Wait() is True


def test_handle_constructors(instance):
    greq = Grequest.Start()
    assert type(Grequest(greq)) is Grequest and Grequest(greq) == greq
    assert type(Request(greq)) is Request and Request(greq) == greq
    assert not Grequest() and Grequest(REQUEST_NULL) == REQUEST_NULL
    with pytest.raises(TypeError):
        Prequest(greq)
    with pytest.raises(TypeError):
        Grequest.Start(3)
    greq.Complete()
    greq.Wait()
