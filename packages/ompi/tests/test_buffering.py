"""Buffered-send buffers of MPI 4.1: per communicator, per session and per process.

A buffered send uses the communicator's buffer, else its session's, else the process's; the
tests tell which one by attaching buffers too small for the message where it must not go.
"""

import numpy as np
import pytest

from ompy.ompi.api import rc
from ompy.ompi.api.bsend import BsendPool, buffer_pool
from ompy.ompi.api.session import session_on
from ompy.ompi.api.testing import interpreter_world, make_world, no_default_instance
from ompy.ompi.datatype.buffer import parse_buffer

rc.initialize = False  # these tests install a loopback process instead of a launched one
from ompy import MPI  # noqa: E402

MESSAGE = np.arange(16.0)  # 128 bytes
ROOM = MESSAGE.nbytes + MPI.BSEND_OVERHEAD
TOO_SMALL = 8


@pytest.fixture
def world():
    """A one-rank loopback world installed as this interpreter's MPI process."""
    with interpreter_world():
        yield MPI.COMM_WORLD


def _bsend_and_receive(comm: MPI.Comm, tag: int = 5) -> None:
    comm.Bsend(MESSAGE, 0, tag)
    out = np.zeros_like(MESSAGE)
    comm.Recv(out, 0, tag)
    assert np.array_equal(out, MESSAGE)


def _fails_for_want_of_room(call) -> None:
    with pytest.raises(MPI.Exception) as info:
        call()
    assert info.value.Get_error_class() == MPI.ERR_BUFFER
    assert "needs" in str(info.value)


# -- the lookup order ---------------------------------------------------------------------------


def test_a_communicator_buffer_comes_before_the_process_buffer(world):
    comm = world.Dup()
    MPI.Attach_buffer(bytearray(ROOM))
    comm.Attach_buffer(bytearray(TOO_SMALL))
    _fails_for_want_of_room(lambda: comm.Bsend(MESSAGE, 0, 1))
    _bsend_and_receive(world)  # the world communicator has no buffer: the process's
    assert len(comm.Detach_buffer()) == TOO_SMALL
    _bsend_and_receive(comm)  # now the process's buffer serves this communicator too
    MPI.Detach_buffer()
    comm.Free()


def test_a_dup_does_not_inherit_the_communicators_buffer(world):
    comm = world.Dup()
    comm.Attach_buffer(bytearray(ROOM))
    other = comm.Dup()
    _bsend_and_receive(comm)
    with pytest.raises(MPI.Exception, match="no buffer is attached") as info:
        other.Bsend(MESSAGE, 0, 1)  # no buffer anywhere
    assert info.value.Get_error_class() == MPI.ERR_BUFFER
    comm.Detach_buffer()
    other.Free()
    comm.Free()


def test_a_session_buffer_serves_the_communicators_derived_from_the_session(world):
    instance = world._c.instance
    session = session_on(instance)
    comm = MPI.Intracomm.Create_from_group(session.Create_group("mpi://WORLD"), "org.ompy.b")
    derived = comm.Dup()
    MPI.Attach_buffer(bytearray(TOO_SMALL))
    session.Attach_buffer(bytearray(ROOM))
    assert buffer_pool(comm._c) is session._s.bsend is buffer_pool(derived._c)
    _bsend_and_receive(comm)
    _bsend_and_receive(derived)
    _fails_for_want_of_room(lambda: world.Bsend(MESSAGE, 0, 1))  # world model: the process's
    derived.Attach_buffer(bytearray(TOO_SMALL))  # the communicator's own comes first
    _fails_for_want_of_room(lambda: derived.Bsend(MESSAGE, 0, 1))
    derived.Detach_buffer()
    assert len(session.Detach_buffer()) == ROOM
    _fails_for_want_of_room(lambda: comm.Bsend(MESSAGE, 0, 1))  # falls back to the process's
    MPI.Detach_buffer()
    derived.Free()
    comm.Free()


def test_buffer_automatic_needs_no_room(world):
    comm = world.Dup()
    comm.Attach_buffer(MPI.BUFFER_AUTOMATIC)
    for tag in range(3):
        _bsend_and_receive(comm, tag)
    assert comm.Detach_buffer() is MPI.BUFFER_AUTOMATIC
    comm.Attach_buffer(None)  # None means automatic, as in mpi4py
    assert comm.Detach_buffer() is MPI.BUFFER_AUTOMATIC
    comm.Free()


# -- attach, detach, flush ------------------------------------------------------------------------


def test_one_buffer_at_a_time_and_detach_needs_one(world):
    comm = world.Dup()
    session = session_on(world._c.instance)
    for owner in (comm, session):
        with pytest.raises(MPI.Exception) as info:
            owner.Detach_buffer()
        assert info.value.Get_error_class() == MPI.ERR_BUFFER
        buf = bytearray(ROOM)
        owner.Attach_buffer(buf)
        with pytest.raises(MPI.Exception, match="already attached"):
            owner.Attach_buffer(bytearray(ROOM))
        assert owner.Detach_buffer() is buf
    with pytest.raises(BufferError):
        comm.Attach_buffer(b"read-only bytes")
    comm.Free()


def test_flushes_complete_at_once_when_nothing_is_pending(world):
    comm = world.Dup()
    session = session_on(world._c.instance)
    of_session = MPI.Intracomm.Create_from_group(session.Create_group("mpi://SELF"), "org.s")
    for owner, user in ((comm, comm), (session, of_session)):
        owner.Flush_buffer()  # no buffer: nothing to wait for
        assert owner.Iflush_buffer().Test()
        owner.Attach_buffer(bytearray(ROOM))
        _bsend_and_receive(user)
        owner.Flush_buffer()
        request = owner.Iflush_buffer()
        assert isinstance(request, MPI.Request) and request.Wait()
        owner.Detach_buffer()
    MPI.Flush_buffer()
    assert MPI.Iflush_buffer().Test()
    of_session.Free()
    comm.Free()


def test_a_flush_request_completes_when_the_last_pending_send_is_released():
    process = BsendPool()
    pool = BsendPool(process)
    pool.attach(bytearray(2 * ROOM))
    first = pool.copy_in(parse_buffer(MESSAGE), "Bsend")[1]
    second = pool.copy_in(parse_buffer(MESSAGE), "Bsend")[1]
    assert (pool.pending, process.outstanding, process.pending) == (2, 2, 0)
    flush = pool.flush_request()
    assert not flush.complete
    pool.release(first)
    assert not flush.complete and process.outstanding == 1
    pool.release(second)
    assert flush.complete and process.outstanding == 0
    assert pool.flush_request().complete


def test_buffer_calls_need_a_live_owner(world):
    comm = world.Dup()
    comm.Free()
    with pytest.raises(MPI.Exception) as info:
        comm.Attach_buffer(bytearray(ROOM))
    assert info.value.Get_error_class() == MPI.ERR_COMM
    with pytest.raises(MPI.Exception) as info:
        MPI.SESSION_NULL.Flush_buffer()
    assert info.value.Get_error_class() == MPI.ERR_SESSION


def test_the_module_flush_needs_mpi():
    with no_default_instance():
        with pytest.raises(MPI.Exception, match="not initialized"):
            MPI.Flush_buffer()
        with pytest.raises(MPI.Exception, match="not initialized"):
            MPI.Iflush_buffer()


def test_a_session_flush_request_waits_on_its_own_instance_without_the_world_model():
    (comm,) = make_world(1)
    session = session_on(comm._c.instance)
    session.Attach_buffer(bytearray(ROOM))
    request = session.Iflush_buffer()
    assert request._comm.instance is comm._c.instance and request.Wait()
    session.Detach_buffer()
