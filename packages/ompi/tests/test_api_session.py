"""MPI-4 sessions: the handle, process sets, info, thread levels, and sharing the instance.

The lifecycle tests replace ``boot.start``/``boot.stop`` (the run-time) with a one-rank loopback
instance, so the default instance's reference counting runs exactly as in a launched process:
sessions and the world model acquire and release the same instance.
"""

import pickle

import numpy as np
import pytest

from ompy.ompi import boot
from ompy.ompi import instance as instances
from ompy.ompi.api import rc
from ompy.ompi.api.session import SESSION_NULL, session_on
from ompy.ompi.api.testing import (
    Fabric,
    LoopbackPml,
    LoopbackProc,
    make_world,
    no_default_instance,
    run_ranks,
)
from ompy.ompi.constants import THREAD_MULTIPLE, THREAD_SERIALIZED, THREAD_SINGLE, UNDEFINED
from ompy.ompi.group import Group
from ompy.opal.progress import ProgressEngine

rc.initialize = False  # these tests install loopback processes instead of a launched one
from ompy import MPI  # noqa: E402


def _error_class(info: pytest.ExceptionInfo) -> int:
    return info.value.Get_error_class()


# -- the handle ---------------------------------------------------------------------------------


def test_a_null_session_is_false_equal_to_session_null_and_refuses_every_call():
    session = MPI.Session()
    assert not session and session == MPI.SESSION_NULL and MPI.SESSION_NULL is SESSION_NULL
    for call in (
        session.Finalize,
        session.Get_num_psets,
        session.Get_info,
        lambda: session.Get_nth_pset(0),
        lambda: session.Get_pset_info("mpi://WORLD"),
        lambda: session.Create_group("mpi://WORLD"),
    ):
        with pytest.raises(MPI.Exception) as info:
            call()
        assert _error_class(info) == MPI.ERR_SESSION
    session.free()  # a null session: nothing to do
    assert pickle.loads(pickle.dumps(MPI.SESSION_NULL)) is MPI.SESSION_NULL
    assert not pickle.loads(pickle.dumps(MPI.Session()))
    with pytest.raises(TypeError, match="takes a Session"):
        MPI.Session(3)


def test_a_live_session_compares_by_what_it_refers_to_and_cannot_travel():
    (world,) = make_world(1)
    session = session_on(world._c.instance)
    other = session_on(world._c.instance)
    assert session and MPI.Session(session) == session and session != other
    assert len({session, MPI.Session(session), other}) == 2
    with pytest.raises(ValueError, match=r"cannot serialize '.*Session' instance"):
        pickle.dumps(session)
    alias = MPI.Session(session)
    session.Finalize()
    assert session == MPI.SESSION_NULL
    with pytest.raises(MPI.Exception, match="was finalized") as info:
        alias.Get_num_psets()
    assert _error_class(info) == MPI.ERR_SESSION


# -- process sets ---------------------------------------------------------------------------------


def test_process_sets_world_self_and_the_callers_node():
    def body(world):
        session = session_on(world._c.instance)
        names = [session.Get_nth_pset(n) for n in range(session.Get_num_psets())]
        sizes = {name: session.Get_pset_info(name).Get("mpi_size") for name in names}
        groups = {name: session.Create_group(name) for name in names}
        shape = {name: (g.Get_size(), g.Get_rank(), g.procs) for name, g in groups.items()}
        session.Finalize()
        return names, sizes, shape

    results = run_ranks(make_world(3, nodes=[0, 1, 0]), body)
    for rank, (names, sizes, shape) in enumerate(results):
        assert names == ["mpi://WORLD", "mpi://SELF", "mpix://SHARED"]
        shared = (0, 2) if rank != 1 else (1,)
        assert sizes == {"mpi://WORLD": "3", "mpi://SELF": "1", "mpix://SHARED": str(len(shared))}
        assert shape["mpi://WORLD"] == (3, rank, (0, 1, 2))
        assert shape["mpi://SELF"] == (1, 0, (rank,))
        assert shape["mpix://SHARED"] == (len(shared), shared.index(rank), shared)


def test_a_group_from_a_process_set_has_the_class_it_was_asked_from():
    class MyGroup(MPI.Group):
        pass

    (world,) = make_world(1)
    session = session_on(world._c.instance)
    group = MyGroup.Create_from_session_pset(session, "mpi://SELF")
    assert type(group) is MyGroup and group.Get_size() == 1
    assert type(MPI.Group.Create_from_session_pset(session, "mpi://WORLD")) is Group
    world_group = session.Create_group("mpi://WORLD")
    assert world_group.Compare(world.Get_group()) == MPI.IDENT
    world_group.Free()
    group.Free()


def test_process_set_errors_name_what_is_wrong():
    (world,) = make_world(1)
    session = session_on(world._c.instance)
    with pytest.raises(MPI.Exception, match=r"'mpi://world' is not a process set") as info:
        session.Create_group("mpi://world")
    assert _error_class(info) == MPI.ERR_ARG
    with pytest.raises(MPI.Exception, match="mpi://WORLD, mpi://SELF, mpix://SHARED"):
        session.Get_pset_info("nowhere")
    with pytest.raises(MPI.Exception, match=r"no process set 3; this session has 3") as info:
        session.Get_nth_pset(3)
    assert _error_class(info) == MPI.ERR_ARG
    with pytest.raises(MPI.Exception):
        session.Get_nth_pset(-1)
    with pytest.raises(TypeError, match="pset_name must be a str"):
        session.Create_group(b"mpi://WORLD")
    with pytest.raises(TypeError, match="must be an int"):
        session.Get_nth_pset("0")
    with pytest.raises(TypeError, match="expecting a Session"):
        MPI.Group.Create_from_session_pset(world, "mpi://WORLD")
    with pytest.raises(TypeError, match="info must be an Info"):
        session.Get_num_psets(info=[("a", "b")])


# -- info and thread levels -----------------------------------------------------------------------


def test_session_info_results_are_new_info_objects():
    (world,) = make_world(1)
    session = session_on(world._c.instance)
    info = session.Get_pset_info("mpi://WORLD")
    assert isinstance(info, MPI.Info) and info.items() == [("mpi_size", "1")]
    again = session.Get_pset_info("mpi://WORLD")
    info.Free()
    assert not info and again.Get("mpi_size") == "1"  # each call returns its own object


def test_a_session_asks_for_multiple_by_default_and_gets_what_ompy_provides():
    (world,) = make_world(1)
    instance = world._c.instance
    default = session_on(instance)
    assert default.Get_info().Get("thread_level") == "MPI_THREAD_MULTIPLE"  # init's maximum
    single = session_on(instance, MPI.Info.Create({"thread_level": "mpi_thread_single"}))
    assert dict(single.Get_info()) == {"thread_level": "MPI_THREAD_SINGLE"}
    with pytest.raises(MPI.Exception, match="thread_level = 'many' is not one of") as info:
        session_on(instance, MPI.Info.Create({"thread_level": "many"}))
    assert _error_class(info) == MPI.ERR_INFO_VALUE
    with pytest.raises(TypeError, match="info must be an Info"):
        session_on(instance, "thread_level=single")
    with pytest.raises(TypeError, match="info must be an Info"):
        session_on(instance, {"thread_level": "MPI_THREAD_SINGLE"})  # mpi4py takes Info only


# -- one instance for every session and the world model -------------------------------------------


@pytest.fixture
def runtime(monkeypatch):
    """``boot.start``/``boot.stop`` replaced by a one-rank loopback instance; what they did."""
    calls: list = []

    def start(level):
        calls.append(("start", level))
        return instances.Instance(
            pml=LoopbackPml(Fabric(), 0),
            engine=ProgressEngine(spin_count=0, block_max_ms=1.0),
            world_rank=0,
            world_size=1,
            procs=(LoopbackProc(0),),
            abort=lambda code, message: None,
            thread_level=level,
        )

    def stop(instance):
        calls.append(("stop", instance))
        instance.close()

    monkeypatch.setattr(boot, "start", start)
    monkeypatch.setattr(boot, "stop", stop)
    with no_default_instance():
        yield calls


def test_a_session_before_init_starts_the_instance_and_the_last_holder_stops_it(runtime):
    first = MPI.Session.Init()
    instance = instances.default()
    assert runtime == [("start", THREAD_MULTIPLE)] and instances.world_state().holders == 1
    assert not MPI.Is_initialized()
    MPI.Init()  # reuses the session's instance
    second = MPI.Session.Init()
    assert len(runtime) == 1 and instances.world_state().holders == 3
    assert MPI.COMM_WORLD._c.instance is instance is second._s.instance
    comm = MPI.Intracomm.Create_from_group(first.Create_group("mpi://WORLD"))
    assert comm.Get_size() == 1 and comm._c.context_id not in (0, 1)
    MPI.Finalize()  # the world model goes, the sessions and their communicator stay
    assert MPI.Is_finalized() and instances.default() is instance and len(runtime) == 1
    out = np.zeros(3)
    request = comm.Irecv(out, 0, 7)
    comm.Send(np.arange(3.0), 0, 7)
    request.Wait()
    assert out.tolist() == [0.0, 1.0, 2.0] and comm.allreduce(5) == 5
    first.Finalize()
    assert instances.default() is instance and len(runtime) == 1
    second.free()  # the last holder
    assert runtime[1] == ("stop", instance) and instances.default() is None
    assert not first and not second


def test_after_init_a_session_shares_the_world_models_instance(runtime):
    assert MPI.Init_thread(MPI.THREAD_SINGLE) == MPI.THREAD_SINGLE
    instance = instances.default()
    session = MPI.Session.Init(info=MPI.Info.Create({"thread_level": "MPI_THREAD_SERIALIZED"}))
    assert runtime == [("start", THREAD_SINGLE)] and session._s.instance is instance
    assert MPI.Query_thread() == THREAD_SERIALIZED  # the instance provides the session's level
    session.Finalize()
    assert instances.default() is instance and MPI.COMM_WORLD.Get_size() == 1
    MPI.Finalize()
    assert runtime[1] == ("stop", instance)


def test_init_after_a_single_threaded_session_still_gets_the_level_it_asks_for(runtime):
    session = MPI.Session.Init(MPI.Info.Create({"thread_level": "MPI_THREAD_SINGLE"}))
    assert runtime == [("start", THREAD_SINGLE)]
    assert MPI.Init_thread(MPI.THREAD_SERIALIZED) == THREAD_SERIALIZED
    assert session.Get_info().Get("thread_level") == "MPI_THREAD_SINGLE"
    MPI.Finalize()
    session.Finalize()
    assert [call[0] for call in runtime] == ["start", "stop"]


def test_sessions_one_after_the_other_each_start_and_stop_the_instance(runtime):
    for _ in range(2):
        session = MPI.Session.Init()
        assert session.Get_num_psets() == 3
        session.Finalize()
    assert [call[0] for call in runtime] == ["start", "stop", "start", "stop"]
    assert instances.world_state().holders == 0


def test_a_failed_start_holds_nothing(monkeypatch, no_mpi):
    def start(level):
        raise MPI.Exception(MPI.ERR_OTHER, "no run-time here")

    monkeypatch.setattr(boot, "start", start)
    with pytest.raises(MPI.Exception, match="no run-time here"):
        MPI.Session.Init()
    assert instances.default() is None and instances.world_state().holders == 0


def test_groups_of_a_communicator_and_of_its_subgroups_carry_the_instance():
    (world,) = make_world(1)
    instance = world._c.instance
    group = world.Get_group()
    assert group.members.instance is instance
    assert group.Incl([0]).members.instance is instance
    assert group.Dup().members.instance is instance
    assert Group.Union(group, group).members.instance is instance
    assert group.Excl([0]).Get_rank() == UNDEFINED  # GROUP_EMPTY
