"""``MPI.Intercomm`` and ``Intracomm.Create_intercomm`` on loopback worlds.

The collectives themselves are checked by coll-inter's battery; these tests pin down the
handle, the constructors' rules (which group comes first, who gets COMM_NULL, what context ids
are used and given back) and the errors bad arguments raise.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.opal.mca.params import Registry


def _halves(world, split_at=None):
    """An intercommunicator of ranks below ``split_at`` (default: half) and the others."""
    size, rank = world.Get_size(), world.Get_rank()
    split_at = (size + 1) // 2 if split_at is None else split_at
    low = rank < split_at
    local = world.Split(0 if low else 1, rank)
    inter = local.Create_intercomm(0, world, split_at if low else 0, tag=9)
    return inter, local, low


def _error_class(action) -> int | None:
    try:
        action()
    except MPI.Exception as error:
        return error.Get_error_class()
    return None


def test_handles_are_of_the_right_class_and_refuse_the_other_kind():
    def body(world):
        inter, local, _ = _halves(world)
        # the class a handle made from the communicator alone gets (f2py, fromhandle, pickling)
        out = (
            type(inter) is MPI.Intercomm,
            MPI.Comm._class_for(inter._c) is MPI.Intercomm,
            MPI.Comm._class_for(local._c) is MPI.Intracomm,
        )
        with pytest.raises(TypeError, match="expecting an intercommunicator"):
            MPI.Intercomm(local)
        with pytest.raises(TypeError, match="expecting an intracommunicator"):
            MPI.Intracomm(inter)
        assert MPI.Intercomm(inter) == inter
        assert "Intercomm" in repr(inter)
        inter.Free()
        local.Free()
        return out

    assert run_ranks(make_world(3), body) == [(True, True, True)] * 3


def test_sizes_groups_and_properties_are_the_local_and_the_remote_groups():
    def body(world):
        inter, local, _low = _halves(world)
        remote = inter.remote_group
        result = (
            inter.size,
            inter.rank,
            inter.remote_size,
            MPI.Group.Translate_ranks(remote, list(range(remote.size)), world.Get_group()),
            inter.is_inter,
            inter.Is_intra(),
        )
        inter.Free()
        local.Free()
        return result

    results = run_ranks(make_world(5), body)
    assert results[0] == (3, 0, 2, [3, 4], True, False)
    assert results[2] == (3, 2, 2, [3, 4], True, False)
    assert results[4] == (2, 1, 3, [0, 1, 2], True, False)


def test_free_gives_back_both_context_ids():
    def body(world):
        instance = world._c.instance
        before = set(instance.cids)
        inter, local, _ = _halves(world)
        during = len(instance.cids - before)
        local_cid = inter._c.local_comm.context_id
        inter.Free()
        local.Free()
        return during, local_cid in instance.cids, instance.cids == before

    # the user's local communicator, the intercommunicator and its private local communicator
    assert run_ranks(make_world(4), body) == [(3, False, True)] * 4


@settings(max_examples=15, deadline=None)
@given(size=st.integers(2, 6), data=st.data())
def test_merge_puts_the_low_group_first_and_keeps_each_groups_order(size, data):
    split_at = data.draw(st.integers(1, size - 1))
    low_high = data.draw(st.booleans())  # the high argument of the group of low ranks

    def body(world):
        inter, local, low = _halves(world, split_at)
        merged = inter.Merge(high=low_high if low else not low_high)
        order = merged.allgather(world.Get_rank())
        for comm in (merged, inter, local):
            comm.Free()
        return order

    lows, highs = list(range(split_at)), list(range(split_at, size))
    expected = highs + lows if low_high else lows + highs
    assert run_ranks(make_world(size), body) == [expected] * size


def test_split_type_shared_pairs_the_processes_of_each_node():
    # world ranks 0..2 form one group, 3..5 the other; nodes 0, 1, 0 | 1, 1, 2
    def body(world):
        inter, local, _ = _halves(world, 3)
        split = inter.Split_type(MPI.COMM_TYPE_SHARED)
        result = None if split == MPI.COMM_NULL else split.allgather(world.Get_rank())
        undefined = inter.Split_type(MPI.UNDEFINED)
        assert undefined == MPI.COMM_NULL
        if split != MPI.COMM_NULL:
            split.Free()
        inter.Free()
        local.Free()
        return result

    results = run_ranks(make_world(6, nodes=[0, 1, 0, 1, 1, 2]), body)
    # node 0 has nobody in the other group; node 1 pairs rank 1 with ranks 3 and 4
    assert results == [None, [3, 4], None, [1], [1], None]


def test_create_from_groups_builds_the_same_intercommunicator_on_both_sides():
    def body(world):
        group = world.Get_group()
        rank = world.Get_rank()
        mine, theirs = ([0, 2], [1]) if rank != 1 else ([1], [0, 2])
        inter = MPI.Intercomm.Create_from_groups(group.Incl(mine), 0, group.Incl(theirs), 0)
        result = (inter.Get_size(), inter.Get_remote_size(), inter.allgather(rank))
        inter.Free()
        return result

    assert run_ranks(make_world(3), body) == [(2, 1, [1]), (1, 2, [0, 2]), (2, 1, [1])]


def test_a_remote_leader_in_the_local_group_is_refused_by_the_whole_group():
    def body(world):
        local = world.Dup()
        try:  # the leader (rank 0) names rank 1, of its own group: every member raises
            return _error_class(lambda: local.Create_intercomm(0, world, 1))
        finally:
            local.Free()

    assert run_ranks(make_world(3), body) == [MPI.ERR_RANK] * 3


def test_bad_leaders_are_refused():
    def body(world):
        local = world.Split(world.Get_rank() % 2, 0)
        bad_local = _error_class(lambda: local.Create_intercomm(5, world, 0))
        local.Free()
        return bad_local

    assert run_ranks(make_world(2), body) == [MPI.ERR_RANK, MPI.ERR_RANK]
    (world,) = make_world(1)
    with pytest.raises(MPI.Exception, match="remote_leader 3 is not a rank"):
        world.Create_intercomm(0, world, 3)
    with pytest.raises(TypeError, match="peer_comm must be an Intracomm"):
        world.Create_intercomm(0, None, 0)


def test_collective_arguments_are_checked_with_intercommunicator_rules():
    def body(world):
        inter, local, _low = _halves(world)
        checks = {
            "root out of range": _error_class(lambda: inter.Bcast(np.zeros(1), root=7)),
            "local rank as root": _error_class(lambda: inter.Bcast(np.zeros(1), root=-7)),
        }
        for name, action in {
            "IN_PLACE allreduce": lambda: inter.Allreduce(MPI.IN_PLACE, np.zeros(1)),
            "IN_PLACE alltoall": lambda: inter.Alltoall(MPI.IN_PLACE, np.zeros(4)),
            "no recvcounts": lambda: inter.Reduce_scatter(np.zeros(4), np.zeros(2)),
        }.items():
            with pytest.raises(ValueError):
                action()
            checks[name] = True
        assert not hasattr(inter, "Scan") and not hasattr(inter, "Iexscan")
        inter.Free()
        local.Free()
        return checks

    for checks in run_ranks(make_world(3), body):
        assert checks["root out of range"] == MPI.ERR_ROOT
        assert checks["local rank as root"] == MPI.ERR_ROOT
        assert all(checks.values())


def test_point_to_point_addresses_the_remote_group():
    def body(world):
        inter, local, low = _halves(world, 1)  # rank 0 against the rest
        if low:
            for dest in range(inter.remote_size):
                inter.send(dest * 10, dest=dest, tag=dest)
            statuses = [MPI.Status() for _ in range(inter.remote_size)]
            got = [inter.recv(source=MPI.ANY_SOURCE, status=s) for s in statuses]
            result = sorted(zip((s.Get_source() for s in statuses), got, strict=True))
        else:
            value = inter.recv(source=0, tag=inter.rank)
            inter.send(value + 1, dest=0)
            result = value
        with pytest.raises(MPI.Exception, match="destination rank"):
            inter.Send(np.zeros(1), inter.remote_size)
        inter.Free()
        local.Free()
        return result

    assert run_ranks(make_world(4), body) == [[(0, 1), (1, 11), (2, 21)], 0, 10, 20]


def test_only_coll_inter_serves_an_intercommunicator():
    def body(world):
        inter, local, _ = _halves(world)
        table = inter._c.coll
        providers = {table.provider(op) for op in ("barrier", "ialltoallw", "allreduce_object")}
        scan = table.provider("scan")
        inter.Free()
        local.Free()
        return providers, scan

    assert run_ranks(make_world(2), body) == [({"inter"}, None)] * 2


def test_every_point_to_point_form_crosses_the_groups():
    def body(world):
        inter, local, low = _halves(world, 2)  # ranks 0, 1 against ranks 2, 3
        peer = inter.rank  # the process of the same rank in the other group
        me = float(world.Get_rank())
        got = {}
        # persistent requests
        out = np.zeros(1)
        recv = inter.Recv_init(out, peer, 1)
        send = inter.Send_init(np.array([me]), peer, 1)
        MPI.Prequest.Startall([recv, send])
        MPI.Request.Waitall([recv, send])
        got["persistent"] = out[0]
        recv.Free()
        send.Free()
        # matched probe and receive, synchronous and ready sends
        if low:
            inter.Ssend(np.array([me]), peer, 2)
            inter.Barrier()  # the receive is posted before the ready send
            inter.Rsend(np.array([me]), peer, 3)
            status = MPI.Status()
            message = inter.Mprobe(peer, 4, status)
            got["mprobe"] = (status.Get_source(), message.recv())
        else:
            inter.Recv(out, peer, 2)
            got["ssend"] = out[0]
            ready = inter.Irecv(out, peer, 3)
            inter.Barrier()
            ready.Wait()
            got["rsend"] = out[0]
            inter.send(me, dest=peer, tag=4)
        # send-receive, in place
        buf = np.array([me])
        inter.Sendrecv_replace(buf, dest=peer, sendtag=5, source=peer, recvtag=5)
        got["sendrecv_replace"] = buf[0]
        got["iprobe after"] = inter.Iprobe(MPI.ANY_SOURCE, MPI.ANY_TAG)
        inter.Free()
        local.Free()
        return got

    results = run_ranks(make_world(4), body)
    assert results[0] == {
        "persistent": 2.0,
        "mprobe": (0, 2.0),
        "sendrecv_replace": 2.0,
        "iprobe after": False,
    }
    assert results[3] == {
        "persistent": 1.0,
        "ssend": 1.0,
        "rsend": 1.0,
        "sendrecv_replace": 1.0,
        "iprobe after": False,
    }


def test_without_coll_inter_a_collective_on_an_intercommunicator_fails_clearly():
    def body(world):
        inter, local, _ = _halves(world)
        with pytest.raises(MPI.Exception, match="install ompy-coll-inter") as caught:
            inter.Barrier()
        inter.Free()
        local.Free()
        return caught.value.Get_error_class()

    registry = Registry(environ={"OMPY_MCA_coll": "^inter"}, files=[])
    results = run_ranks(make_world(2, registry=registry), body)
    assert results == [MPI.ERR_UNSUPPORTED_OPERATION] * 2


def test_dup_with_info_and_clone_keep_both_groups():
    def body(world):
        inter, local, _ = _halves(world)
        info = MPI.Info.Create({"mpi_assert_no_any_tag": "true"})
        dup = inter.Dup_with_info(info)
        clone = inter.Clone()
        result = (
            type(dup) is MPI.Intercomm and type(clone) is MPI.Intercomm,
            dup.Get_info().Get("mpi_assert_no_any_tag"),
            dup.allgather(world.Get_rank()) == clone.allgather(world.Get_rank()),
            inter.Compare(clone),
        )
        for comm in (dup, clone, inter, local):
            comm.Free()
        return result

    assert run_ranks(make_world(3), body) == [(True, "true", True, MPI.CONGRUENT)] * 3


def test_the_mpi4_calls_of_the_intracommunicator_work_across_an_intercommunicator():
    """Idup, Isendrecv and partitioned sends address the remote group, as point-to-point does."""

    def body(world):
        inter, local, low = _halves(world)
        dup, request = inter.Idup()
        request.Wait()
        assert type(dup) is MPI.Intercomm and dup.Get_remote_size() == inter.Get_remote_size()
        peer = local.Get_rank() % inter.Get_remote_size()
        got = np.zeros(1, dtype="i8")
        mine = np.array([world.Get_rank()], dtype="i8")
        dup.Isendrecv(mine, peer, 3, got, MPI.ANY_SOURCE, 3).Wait()
        sources = dup.allgather(int(got[0]))
        dup.Free()
        inter.Free()
        local.Free()
        return low, int(got[0]), sources

    results = run_ranks(make_world(4), body)
    low_ranks = [r for r, (low, _, _) in enumerate(results) if low]
    high_ranks = [r for r, (low, _, _) in enumerate(results) if not low]
    for rank, (low, got, _) in enumerate(results):
        assert got in (high_ranks if low else low_ranks), (rank, got)
