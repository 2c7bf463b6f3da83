"""Communicator management: Dup, Split, Split_type, Create, Free, Compare, names, attributes."""

import numpy as np
import pytest

from ompy.ompi import errors
from ompy.ompi.api.comm import COMM_NULL, COMM_TYPE_SHARED, Comm, Intracomm
from ompy.ompi.api.testing import AbortedError, make_world, run_ranks
from ompy.ompi.constants import (
    CONGRUENT,
    IDENT,
    SIMILAR,
    TAG_UB,
    TAG_UB_VALUE,
    UNDEFINED,
    UNEQUAL,
    UNIVERSE_SIZE,
)


def test_split_orders_by_key_then_rank_and_undefined_gets_comm_null():
    def body(world):
        color = UNDEFINED if world.rank == 4 else world.rank % 2
        sub = world.Split(color, key=-world.rank)
        if color == UNDEFINED:
            return sub == COMM_NULL
        return (type(sub) is Intracomm, sub.rank, sub.size, sub.Get_group().procs)

    results = run_ranks(make_world(5), body)
    assert results[4] is True
    assert results[0] == (True, 1, 2, (2, 0))
    assert results[2] == (True, 0, 2, (2, 0))
    assert results[1][1:4] == (1, 2, (3, 1))


def test_new_communicators_get_fresh_context_ids_and_isolate_traffic():
    def body(world):
        dup = world.Dup()
        clone = dup.Clone()
        ids = {world._c.context_id, dup._c.context_id, clone._c.context_id}
        peer = 1 - world.rank
        received = None
        if world.rank == 0:
            world.Send(np.array([1.0]), peer, 0)
            dup.Send(np.array([2.0]), peer, 0)
        else:
            out = np.zeros(1)
            dup.Recv(out, 0, 0)  # the dup's message, although the world's was sent first
            first = out[0]
            world.Recv(out, 0, 0)
            received = (first, out[0], dup.Compare(world), world.Compare(world))
        freed = dup._c.context_id
        dup.Free()
        assert dup == COMM_NULL
        with pytest.raises(errors.Exception) as info:
            dup.Send(np.zeros(1), 1)
        assert info.value.Get_error_class() == errors.ERR_COMM
        again = world.Dup()
        return ids, received, again._c.context_id == freed  # a freed id is used again

    first, second = run_ranks(make_world(2), body)
    assert len(first[0]) == 3 and first[0] == second[0]
    assert second[1] == (2.0, 1.0, CONGRUENT, IDENT)
    assert first[2] and second[2]


def test_compare_similar_and_unequal():
    def body(world):
        reversed_ = world.Split(0, key=-world.rank)
        half = world.Split(world.rank // 2, world.rank)
        return world.Compare(reversed_), world.Compare(half)

    assert run_ranks(make_world(4), body)[0] == (SIMILAR, UNEQUAL)


def test_split_type_shared_groups_ranks_by_node():
    def body(world):
        node = world.Split_type(COMM_TYPE_SHARED, key=world.rank)
        none = world.Split_type(UNDEFINED)
        with pytest.raises(errors.Exception) as info:
            world.Split_type(12345)
        return node.Get_group().procs, none == COMM_NULL, info.value.Get_error_class()

    results = run_ranks(make_world(4, nodes=[0, 1, 0, 1]), body)
    assert results[0] == ((0, 2), True, errors.ERR_ARG)
    assert results[3][0] == (1, 3)


def test_create_from_a_subgroup():
    def body(world):
        group = world.Get_group().Incl([3, 1])
        sub = world.Create(group)
        if world.rank in (1, 3):
            return sub.rank, sub.size
        return sub == COMM_NULL

    assert run_ranks(make_world(4), body) == [True, (1, 2), True, (0, 2)]


def test_predefined_attributes_names_and_handles():
    world = make_world(1)[0]
    assert world.Get_attr(TAG_UB) == TAG_UB_VALUE
    assert world.Get_attr(UNIVERSE_SIZE) == 1
    with pytest.raises(errors.Exception) as info:
        world.Get_attr(999)
    assert info.value.Get_error_class() == errors.ERR_KEYVAL
    assert world.name == "MPI_COMM_WORLD"
    world.Set_name("mine")
    assert world.Get_name() == "mine"
    world.name = "MPI_COMM_WORLD"
    with pytest.raises(errors.Exception, match="predefined"):
        world.Free()
    assert COMM_NULL.Get_name() == "MPI_COMM_NULL"  # MPI names the null communicator too
    freed = world.Dup()
    freed.Free()
    assert freed.Get_name() == "MPI_COMM_NULL"
    with pytest.raises(errors.Exception, match="COMM_NULL"):
        freed.Set_name("x")
    alias = Comm(world)
    assert alias == world and alias is not world and hash(alias) == hash(world)
    assert world.Is_intra() and not world.Is_inter() and world.is_intra
    assert world.size == 1 and world.rank == 0
    world.Barrier()
    world.barrier()
    assert not COMM_NULL and Comm() == COMM_NULL
    with pytest.raises(AbortedError, match="abort\\(3\\)"):
        world.Abort(3)


def test_barrier_waits_for_every_rank():
    import threading

    arrived = []
    lock = threading.Lock()

    def body(world):
        with lock:
            arrived.append(world.rank)
        world.Barrier()
        with lock:
            return len(arrived)

    assert run_ranks(make_world(5), body) == [5] * 5
