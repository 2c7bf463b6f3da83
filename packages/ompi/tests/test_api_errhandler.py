"""MPI.Errhandler: the handles, the predefined handlers, user handlers, inheritance, and errors of
communicator and session calls going through the object's handler."""

import inspect
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ompy.ompi.api import rc
from ompy.ompi.api.session import session_on
from ompy.ompi.api.testing import (
    AbortedError,
    default_instance,
    make_world,
    no_default_instance,
    run_ranks,
)
from ompy.ompi.handle import FIRST_USER_HANDLE
from ompy.ompi.instance import adopted

rc.initialize = False  # these tests use loopback instances, not a launched process
from ompy import MPI  # noqa: E402


@pytest.fixture
def recorder():
    """A user error handler (made on a default loopback instance) and the calls it got."""
    calls = []

    def record(obj, code):
        calls.append((obj, obj == kept[0] if kept else None, code))

    kept = []
    with default_instance():
        handler = MPI.Comm.Create_errhandler(record)
    return handler, calls, kept


# -- the handles ---------------------------------------------------------------------------------


def test_predefined_handlers_are_true_and_the_null_handle_false():
    assert not MPI.ERRHANDLER_NULL and MPI.Errhandler() == MPI.ERRHANDLER_NULL
    assert MPI.ERRORS_RETURN and MPI.ERRORS_ARE_FATAL and MPI.ERRORS_ABORT
    assert len({MPI.ERRORS_RETURN, MPI.ERRORS_ARE_FATAL, MPI.ERRORS_ABORT}) == 3
    assert MPI.Errhandler(MPI.ERRORS_RETURN) == MPI.ERRORS_RETURN
    with pytest.raises(TypeError):
        MPI.Errhandler(MPI.COMM_NULL)


def test_predefined_handlers_pickle_as_themselves_and_user_handlers_do_not(recorder):
    for handler in (MPI.ERRHANDLER_NULL, MPI.ERRORS_RETURN, MPI.ERRORS_ABORT, MPI.ERRORS_ARE_FATAL):
        assert pickle.loads(pickle.dumps(handler)) is handler
        copy = pickle.loads(pickle.dumps(MPI.Errhandler(handler)))
        assert copy == handler
    user, _, _ = recorder
    with pytest.raises(ValueError, match="cannot serialize"):
        pickle.dumps(user)


def test_integer_handles_follow_open_mpi_and_the_instance_table():
    assert [h.toint() for h in (MPI.ERRHANDLER_NULL, MPI.ERRORS_ARE_FATAL)] == [0, 1]
    assert [h.py2f() for h in (MPI.ERRORS_RETURN, MPI.ERRORS_ABORT)] == [2, 3]
    assert MPI.Errhandler.fromint(2) == MPI.ERRORS_RETURN  # a new handle, as in mpi4py
    assert MPI.Errhandler.f2py(0) == MPI.ERRHANDLER_NULL and not MPI.Errhandler.f2py(0)
    assert MPI.Errhandler.fromhandle(MPI.ERRORS_ABORT.handle) == MPI.ERRORS_ABORT
    with default_instance() as instance:
        mine = MPI.Comm.Create_errhandler(lambda comm, code: None)
        number = mine.toint()
        assert number >= FIRST_USER_HANDLE and MPI.Errhandler.fromint(number) == mine
        assert MPI.Errhandler(mine).py2f() == number  # another handle, the same integer
        assert len(instance.handles) == 1  # the instance's handle table numbers them
        with pytest.raises(ValueError, match="no Errhandler has handle"):
            MPI.Errhandler.fromint(number + 1000)
        with pytest.raises(ValueError, match="no Errhandler has handle"):
            MPI.Errhandler.fromint(MPI.Info.Create().toint())  # an info's number


def test_handlers_can_be_made_before_mpi_is_initialized():
    # MPI lets a program make a session's handler first, to pass it to Session.Init.
    handler = MPI.Session.Create_errhandler(lambda session, code: None)
    assert handler and handler != MPI.ERRORS_RETURN and MPI.Errhandler(handler) == handler
    with no_default_instance(), pytest.raises(MPI.Exception, match="not initialized"):
        handler.toint()  # integer handles come from an instance's table
    with default_instance():
        index = handler.toint()
        assert MPI.Errhandler.f2py(index) == handler and handler.py2f() == index


def test_free_nulls_a_handle_but_not_the_predefined_constants():
    (world,) = make_world(1)
    handles = [world.Get_errhandler() for _ in range(5)]
    for handle in handles:
        assert handle == MPI.ERRORS_RETURN
        handle.Free()
        assert handle == MPI.ERRHANDLER_NULL
    assert world.Get_errhandler() == MPI.ERRORS_RETURN  # the communicator keeps its handler
    with pytest.raises(MPI.Exception, match="predefined") as error:
        MPI.ERRORS_RETURN.Free()
    assert error.value.Get_error_class() == MPI.ERR_ARG and MPI.ERRORS_RETURN
    with pytest.raises(MPI.Exception, match="ERRHANDLER_NULL"):
        MPI.Errhandler().Free()
    MPI.ERRORS_RETURN.free()  # free() leaves the predefined ones alone


# -- setting and inheriting ------------------------------------------------------------------------


def test_the_default_handler_returns_errors_as_exceptions():
    (world,) = make_world(1)
    assert world.Get_errhandler() == MPI.ERRORS_RETURN
    with pytest.raises(MPI.Exception) as error:
        world.Send(np.zeros(1), 5)
    assert error.value.Get_error_class() == MPI.ERR_RANK
    world.Call_errhandler(MPI.ERR_OTHER)  # returns: nothing happens


def test_new_communicators_inherit_their_parents_handler(recorder):
    user, _, _ = recorder

    def body(world):
        world.Set_errhandler(user)
        dup = world.Dup()
        split = world.Split(0)
        group = world.Create_group(world.Get_group())
        created = world.Create(world.Get_group())
        dup.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        return [c.Get_errhandler() == user for c in (world, split, group, created, dup.Dup())]

    assert run_ranks(make_world(2), body) == [[True, True, True, True, False]] * 2


def test_set_errhandler_checks_its_argument(recorder):
    (world,) = make_world(1)
    with pytest.raises(MPI.Exception, match="ERRHANDLER_NULL") as error:
        world.Set_errhandler(MPI.ERRHANDLER_NULL)
    assert error.value.Get_error_class() == MPI.ERR_ARG
    with pytest.raises(TypeError, match="expecting an Errhandler"):
        world.Set_errhandler(None)
    with default_instance():
        session_handler = MPI.Session.Create_errhandler(lambda session, code: None)
    with pytest.raises(MPI.Exception, match="created for session objects") as error:
        world.Set_errhandler(session_handler)
    assert error.value.Get_error_class() == MPI.ERR_ARG
    with pytest.raises(TypeError, match="must be callable"), default_instance():
        MPI.Comm.Create_errhandler(3)
    with pytest.raises(MPI.Exception, match="COMM_NULL"):
        MPI.COMM_NULL.Set_errhandler(MPI.ERRORS_RETURN)


# -- what happens on an error ----------------------------------------------------------------------


def test_a_user_handler_gets_the_communicator_and_code_then_the_call_raises(recorder):
    user, calls, kept = recorder
    (world,) = make_world(1)
    dup = world.Dup()
    kept.append(dup)
    dup.Set_errhandler(user)
    with pytest.raises(MPI.Exception) as error:
        dup.Send(np.zeros(1), 7)
    assert error.value.Get_error_class() == MPI.ERR_RANK
    ((handle, was_equal, code),) = calls
    assert was_equal and code == MPI.ERR_RANK and type(handle) is MPI.Intracomm
    assert handle == MPI.COMM_NULL  # the handle the function got is null afterwards
    dup.Call_errhandler(MPI.ERR_OTHER)  # Call_errhandler runs it and returns
    assert calls[-1][1:] == (True, MPI.ERR_OTHER)
    world.Send(np.zeros(1), 0)  # other communicators keep the default
    with pytest.raises(MPI.Exception):
        world.Send(np.zeros(1), 7)
    assert len(calls) == 2


def test_attribute_and_buffer_calls_go_through_the_handler_too(recorder):
    user, calls, kept = recorder
    (world,) = make_world(1)
    dup = world.Dup()
    kept.append(dup)
    dup.Set_errhandler(user)
    with pytest.raises(MPI.Exception) as error:
        dup.Get_attr(987654)  # no such keyval
    assert error.value.Get_error_class() == MPI.ERR_KEYVAL
    with pytest.raises(MPI.Exception) as error:
        dup.Detach_buffer()  # nothing attached
    assert error.value.Get_error_class() == MPI.ERR_BUFFER
    assert [(was_equal, code) for _, was_equal, code in calls] == [
        (True, MPI.ERR_KEYVAL),
        (True, MPI.ERR_BUFFER),
    ]
    dup.Free()


def test_a_nested_api_call_runs_the_handler_once(recorder):
    user, calls, _ = recorder
    (world,) = make_world(1)
    world.Set_errhandler(user)
    world._c.freed = True  # make every call fail inside (Clone calls Dup)
    try:
        with pytest.raises(MPI.Exception):
            world.Clone()
    finally:
        world._c.freed = False
    assert calls == []  # a null communicator has no handler, as in mpi4py
    sub = world.Dup()
    sub.Set_errhandler(user)
    with pytest.raises(MPI.Exception):
        sub.Sendrecv_replace(np.zeros(1), 5)
    assert [code for _, _, code in calls] == [MPI.ERR_RANK]


def test_truncation_in_a_receive_goes_through_the_handler(recorder):
    user, calls, _ = recorder

    def body(world):
        world.Set_errhandler(user)
        if world.rank == 0:
            world.Send(np.arange(4.0), 1, 3)
            return None
        with pytest.raises(MPI.Exception) as error:
            world.Recv(np.zeros(2), 0, 3)
        return error.value.Get_error_class()

    assert run_ranks(make_world(2), body)[1] == MPI.ERR_TRUNCATE
    assert [code for _, _, code in calls] == [MPI.ERR_TRUNCATE]


def test_errors_of_requests_go_to_their_communicators_handler(recorder):
    user, calls, kept = recorder

    def body(world):
        dup = world.Dup()
        dup.Set_errhandler(user)
        if world.rank == 0:
            dup.Send(np.arange(4.0), 1, 3)
            return None
        kept.append(dup)
        request = dup.Irecv(np.zeros(2), 0, 3)
        with pytest.raises(MPI.Exception) as error:
            request.Wait()
        return error.value.Get_error_class()

    assert run_ranks(make_world(2), body)[1] == MPI.ERR_TRUNCATE
    ((handle, was_equal, code),) = calls
    assert was_equal and code == MPI.ERR_TRUNCATE and isinstance(handle, MPI.Comm)


def test_generalized_request_errors_go_to_comm_selfs_handler(recorder, capsys):
    user, calls, kept = recorder
    (world,) = make_world(1)
    world.Set_errhandler(user)  # the dispatch wrappers are in

    def failing_query(status):
        raise MPI.Exception(MPI.ERR_OTHER)

    with default_instance():  # without the world model: no handler runs, the call raises
        greq = MPI.Grequest.Start(failing_query)
        greq.Complete()
        with pytest.raises(MPI.Exception):
            MPI.Request(greq).Wait()  # a plain Request handle on it too
        with pytest.raises(MPI.Exception, match="already complete"):
            greq.Complete()
    assert calls == []
    self_comm = world.Dup()  # stands in for COMM_SELF on this one-rank world's instance
    interpreters_self = MPI.COMM_SELF._c
    MPI.COMM_SELF._c = self_comm._c
    kept.append(MPI.COMM_SELF)
    try:
        with adopted(world._c.instance):
            MPI.COMM_SELF.Set_errhandler(user)
            greq = MPI.Grequest.Start(failing_query)
            greq.Complete()
            with pytest.raises(MPI.Exception):
                greq.Wait()
            with pytest.raises(MPI.Exception):
                greq.Complete()
    finally:
        MPI.COMM_SELF._c = interpreters_self
        self_comm.Free()
    assert [(was_equal, code) for _, was_equal, code in calls] == [
        (True, MPI.ERR_OTHER),
        (True, MPI.ERR_REQUEST),
    ]
    assert "failing_query" in capsys.readouterr().err  # the callback's traceback, as mpi4py


@pytest.mark.parametrize("handler", ["ERRORS_ARE_FATAL", "ERRORS_ABORT"])
def test_fatal_handlers_abort_with_the_error_message(handler):
    (world,) = make_world(1)
    world.Set_errhandler(getattr(MPI, handler))
    with pytest.raises(AbortedError) as aborted:
        world.Send(np.zeros(1), 9)
    assert aborted.value.code == MPI.ERR_RANK
    message = str(aborted.value)
    assert "Comm.Send" in message and "MPI_ERR_RANK" in message and "destination rank 9" in message
    assert f"MPI_{handler}" in message
    with pytest.raises(AbortedError, match="MPI_ERR_OTHER"):
        world.Call_errhandler(MPI.ERR_OTHER)


def test_a_user_handler_that_raises_ends_the_job(capsys):
    def broken(comm, code):
        raise RuntimeError("handler bug")

    with default_instance():
        handler = MPI.Comm.Create_errhandler(broken)
    (world,) = make_world(1)
    world.Set_errhandler(handler)
    with pytest.raises(AbortedError, match="exception in user-defined error handler"):
        world.Call_errhandler(MPI.ERR_OTHER)
    assert "handler bug" in capsys.readouterr().err


def test_create_from_group_takes_an_error_handler(recorder):
    user, _, _ = recorder

    def body(world):
        group = world.Get_group()
        plain = MPI.Intracomm.Create_from_group(group, "plain")
        handled = MPI.Intracomm.Create_from_group(group, "handled", errhandler=user)
        return plain.Get_errhandler() == MPI.ERRORS_RETURN, handled.Get_errhandler() == user

    assert run_ranks(make_world(2), body) == [(True, True)] * 2


# -- sessions --------------------------------------------------------------------------------------


def test_sessions_have_error_handlers_too():
    (world,) = make_world(1)
    instance = world._c.instance
    session = session_on(instance)
    assert session.Get_errhandler() == MPI.ERRORS_RETURN
    calls = []
    with default_instance():
        handler = MPI.Session.Create_errhandler(lambda s, code: calls.append((type(s), code)))
    session.Set_errhandler(handler)
    with pytest.raises(MPI.Exception) as error:
        session.Get_nth_pset(99)
    assert error.value.Get_error_class() == MPI.ERR_ARG
    session.Call_errhandler(MPI.ERR_SESSION)
    assert calls == [(MPI.Session, MPI.ERR_ARG), (MPI.Session, MPI.ERR_SESSION)]
    session.Set_errhandler(MPI.ERRORS_ARE_FATAL)
    with pytest.raises(AbortedError, match=r"Session\.Get_nth_pset"):
        session.Get_nth_pset(99)
    session.Set_errhandler(MPI.ERRORS_RETURN)
    with pytest.raises(MPI.Exception, match="created for comm objects"), default_instance():
        session.Set_errhandler(MPI.Comm.Create_errhandler(lambda c, code: None))


# -- the dispatch wrappers ------------------------------------------------------------------------


def test_dispatch_wrappers_keep_every_kind_of_parameter():
    from ompy.ompi.api.errhandler import _dispatching

    marker = object()

    def method(self, a, /, b, c=marker, *rest, d, e=2, **extra):
        return (a, b, c, rest, d, e, extra)

    wrapped = _dispatching(method)
    assert inspect.signature(wrapped) == inspect.signature(method)
    assert wrapped.__wrapped__ is method and wrapped.__name__ == "method"
    assert wrapped(None, 1, 2, d=4) == (1, 2, marker, (), 4, 2, {})
    assert wrapped(None, 1, c=3, b=2, d=4, e=5, f=6) == (1, 2, 3, (), 4, 5, {"f": 6})
    assert wrapped(None, 1, 2, 3, 7, 8, d=4) == (1, 2, 3, (7, 8), 4, 2, {})
    with pytest.raises(TypeError):
        wrapped(None, a=1, b=2, d=4)  # a stays positional-only

    def failing(self, code=MPI.ERR_OTHER):
        raise MPI.Exception(code)

    with pytest.raises(MPI.Exception) as error:
        _dispatching(failing)(object())  # not a handle: nothing to dispatch, still raises
    assert error.value == MPI.ERR_OTHER


# -- the default path costs nothing ----------------------------------------------------------------


def test_methods_are_wrapped_only_once_a_handler_other_than_errors_return_is_set():
    program = textwrap.dedent(
        """
        from ompy.ompi.api import rc
        rc.initialize = False
        from ompy import MPI
        from ompy.ompi.api.p2p import PointToPoint
        from ompy.ompi.api.testing import make_world
        plain = PointToPoint.__dict__["Send"]
        (world,) = make_world(1)
        world.Set_errhandler(MPI.ERRORS_RETURN)
        assert PointToPoint.__dict__["Send"] is plain, "wrapped for ERRORS_RETURN"
        world.Dup().Set_errhandler(MPI.ERRORS_ARE_FATAL)
        assert PointToPoint.__dict__["Send"].__wrapped__ is plain, "not wrapped"
        assert MPI.Intracomm.Barrier.__wrapped__ and MPI.Session.Get_info.__wrapped__
        assert MPI.Request.Wait.__wrapped__ and MPI.Prequest.Start.__wrapped__
        assert MPI.Intracomm.Set_attr.__wrapped__ and MPI.Intracomm.Attach_buffer.__wrapped__
        assert MPI.Session.Flush_buffer.__wrapped__ and MPI.Intracomm.Dup_with_info.__wrapped__
        from ompy.ompi.api.errhandler import CommErrhandlers
        class Later(CommErrhandlers):  # an ompy class made afterwards is wrapped as well
            def Get_thing(self):
                return 1
        Later.__module__ = "ompy.later"
        class Later2(Later):
            pass
        assert Later.Get_thing.__wrapped__
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr
