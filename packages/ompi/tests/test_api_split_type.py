"""``Comm.Split_type`` with every split type and MPI 4.1's info keys, on loopback worlds.

Each rank of a loopback world is a thread; Linux binds threads one by one
(``os.sched_setaffinity(0, ...)`` binds the calling thread), so a test binds each rank's thread
to a processor to give the ranks different hardware places.
"""

import contextlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi import errors
from ompy.ompi.api import hwinfo
from ompy.ompi.api.comm import COMM_NULL
from ompy.ompi.api.info import Info
from ompy.ompi.api.split_type import (
    COMM_TYPE_HW_GUIDED,
    COMM_TYPE_HW_UNGUIDED,
    COMM_TYPE_RESOURCE_GUIDED,
    COMM_TYPE_SHARED,
    resource_kind,
)
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import UNDEFINED

CPUS = sorted(os.sched_getaffinity(0))


@contextlib.contextmanager
def bound_to(cpu):
    """Bind the calling thread to ``cpu`` for the block."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def members(comm):
    """The parent ranks (world ranks here) of a new communicator, in its rank order; None for
    COMM_NULL."""
    if comm == COMM_NULL:
        return None
    return list(comm._c.world_ranks)


def info_of(**pairs):
    info = Info.Create()
    for key, value in pairs.items():
        info.Set(key, value)
    return info


def test_resource_type_names_accept_hwloc_names_plain_names_and_open_mpi_aliases():
    assert resource_kind("mpi_shared_memory") == "Machine"
    assert resource_kind("hwloc://L3Cache") == "L3Cache"
    assert resource_kind("HWLOC://core") == "Core"
    assert resource_kind("l2cache") == "L2Cache"
    assert resource_kind("socket") == "Package"
    assert resource_kind("hwthread") == "PU"
    assert resource_kind("numa") == "NUMANode"
    assert resource_kind("@dont-thread-on-me@") is None


@pytest.mark.parametrize("split_type", [COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED])
def test_guided_splits_without_a_known_resource_give_comm_null(split_type):
    def body(comm):
        got = [members(comm.Split_type(split_type))]
        got.append(members(comm.Split_type(split_type, info=Info.Create())))
        got.append(members(comm.Split_type(split_type, info=info_of(foo="bar"))))
        bad = info_of(mpi_hw_resource_type="@dont-thread-on-me@")
        got.append(members(comm.Split_type(split_type, info=bad)))
        return got

    assert run_ranks(make_world(3), body) == [[None] * 4] * 3


@pytest.mark.parametrize("split_type", [COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED])
def test_shared_memory_resource_groups_by_node_and_says_so_in_the_info(split_type):
    def body(comm):
        info = info_of(mpi_hw_resource_type="mpi_shared_memory")
        new = comm.Split_type(split_type, key=-comm.Get_rank(), info=info)
        assert info.Get("mpi_hw_resource_type") == "mpi_shared_memory"
        assert new.Get_info().Get("mpi_hw_resource_type") == "mpi_shared_memory"
        return members(new)

    nodes = [0, 1, 0, 1, 0]
    assert run_ranks(make_world(5, nodes=nodes), body) == [
        [4, 2, 0],
        [3, 1],
        [4, 2, 0],
        [3, 1],
        [4, 2, 0],
    ]


def test_one_process_may_split_while_the_others_give_undefined():
    def body(comm):
        results = []
        info = info_of(mpi_hw_resource_type="mpi_shared_memory")
        for root in range(comm.Get_size()):
            split_type = COMM_TYPE_HW_GUIDED if comm.Get_rank() == root else UNDEFINED
            results.append(members(comm.Split_type(split_type, info=info)))
        return results

    assert run_ranks(make_world(3), body) == [
        [[0], None, None],
        [None, [1], None],
        [None, None, [2]],
    ]


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two processors to bind ranks apart")
@pytest.mark.parametrize("value", ["hwloc://PU", "core", "hwthread"])
def test_hw_guided_groups_the_ranks_bound_to_one_resource(value):
    def body(comm):
        rank = comm.Get_rank()
        with bound_to(CPUS[rank % 2]):
            new = comm.Split_type(COMM_TYPE_HW_GUIDED, info=info_of(mpi_hw_resource_type=value))
        assert new.Get_info().Get("mpi_hw_resource_type") == value
        return members(new)

    # ranks 0, 2, 4 share a processor (and its core), 1 and 3 the other; node 1 is apart
    got = run_ranks(make_world(5, nodes=[0, 0, 0, 0, 1]), body)
    assert got == [[0, 2], [1, 3], [0, 2], [1, 3], [4]]


@pytest.mark.skipif(len(CPUS) < 2, reason="needs a process that spans two processors")
def test_a_process_spanning_several_resources_gets_comm_null():
    def body(comm):
        info = info_of(mpi_hw_resource_type="hwloc://PU")
        if comm.Get_rank() == 0:  # unbound: it runs on several processors
            return members(comm.Split_type(COMM_TYPE_HW_GUIDED, info=info))
        with bound_to(CPUS[0]):
            return members(comm.Split_type(COMM_TYPE_HW_GUIDED, info=info))

    assert run_ranks(make_world(3), body) == [None, [1, 2], [1, 2]]


@pytest.mark.skipif(len(CPUS) < 2, reason="needs two processors to bind ranks apart")
def test_hw_unguided_takes_the_largest_resource_that_splits_and_reports_it():
    cpu0, cpu1 = hwinfo.confinement([CPUS[0]]), hwinfo.confinement([CPUS[1]])
    first = next(kind for kind in hwinfo.TYPES[1:] if cpu0.get(kind) != cpu1.get(kind))

    def body(comm):
        rank = comm.Get_rank()
        with bound_to(CPUS[rank % 2]):
            info = Info.Create()
            new = comm.Split_type(COMM_TYPE_HW_UNGUIDED, key=rank, info=info)
            level = info.Get("mpi_hw_resource_type")
            assert new.Get_info().Get("mpi_hw_resource_type") == level
            # inside one processor nothing splits further
            deeper = new.Split_type(COMM_TYPE_HW_UNGUIDED, info=Info.Create())
        return members(new), level, members(deeper)

    got = run_ranks(make_world(4), body)
    assert [g[0] for g in got] == [[0, 2], [1, 3], [0, 2], [1, 3]]
    assert {g[1] for g in got} == {"hwloc://" + first}
    assert [g[2] for g in got] == [None] * 4


def test_hw_unguided_splits_nodes_first_and_gives_comm_null_when_nothing_splits():
    def body(comm):
        info = Info.Create()
        new = comm.Split_type(COMM_TYPE_HW_UNGUIDED, info=info)
        level = info.Get("mpi_hw_resource_type")
        return members(new), level

    got = run_ranks(make_world(4, nodes=[0, 1, 0, 1]), body)
    assert got == [([0, 2], "mpi_shared_memory"), ([1, 3], "mpi_shared_memory")] * 2
    # one unbound process: no kind of resource holds a strict subset of it
    assert run_ranks(make_world(1), body) == [(None, None)]


def test_resource_guided_by_process_set():
    def body(comm):
        results = []
        for pset in ("mpi://WORLD", "mpi://SELF", "mpix://SHARED", "mpi://nowhere"):
            info = info_of(mpi_pset_name=pset)
            new = comm.Split_type(COMM_TYPE_RESOURCE_GUIDED, key=-comm.Get_rank(), info=info)
            if new != COMM_NULL:
                assert new.Get_info().Get("mpi_pset_name") == pset
            results.append(members(new))
        return results

    got = run_ranks(make_world(3, nodes=[0, 1, 0]), body)
    assert got == [
        [[2, 1, 0], [0], [2, 0], None],
        [[2, 1, 0], [1], [1], None],
        [[2, 1, 0], [2], [2, 0], None],
    ]


def test_mismatched_split_types_or_resources_fail_on_every_process():
    def body(comm):
        rank = comm.Get_rank()
        outcomes = []
        split_type = COMM_TYPE_SHARED if rank else COMM_TYPE_HW_GUIDED
        with pytest.raises(errors.Exception) as info:
            comm.Split_type(split_type)
        outcomes.append(info.value.Get_error_class())
        value = "core" if rank else "mpi_shared_memory"
        with pytest.raises(errors.Exception) as info:
            comm.Split_type(COMM_TYPE_HW_GUIDED, info=info_of(mpi_hw_resource_type=value))
        outcomes.append(info.value.Get_error_class())
        assert "different resources" in str(info.value)
        with pytest.raises(errors.Exception) as info:
            comm.Split_type(77)
        outcomes.append(info.value.Get_error_class())
        assert "split type 77 is not supported" in str(info.value)
        # the communicator is still in step afterwards
        outcomes.append(members(comm.Split_type(COMM_TYPE_SHARED)))
        return outcomes

    got = run_ranks(make_world(3), body)
    assert got == [[errors.ERR_ARG, errors.ERR_INFO_VALUE, errors.ERR_ARG, [0, 1, 2]]] * 3


def test_split_type_arguments_are_checked():
    comm = make_world(1)[0]
    with pytest.raises(TypeError, match="split_type must be an int"):
        comm.Split_type("shared")
    with pytest.raises(TypeError, match="info must be an Info"):
        comm.Split_type(COMM_TYPE_SHARED, info={"a": "b"})


@settings(max_examples=15, deadline=None)
@given(
    nodes=st.lists(st.integers(0, 2), min_size=1, max_size=5),
    keys=st.lists(st.integers(-3, 3), min_size=5, max_size=5),
    split_type=st.sampled_from([COMM_TYPE_SHARED, COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED]),
)
def test_node_splits_group_by_node_and_order_by_key_then_rank(nodes, keys, split_type):
    def body(comm):
        info = info_of(mpi_hw_resource_type="mpi_shared_memory")
        return members(comm.Split_type(split_type, key=keys[comm.Get_rank()], info=info))

    got = run_ranks(make_world(len(nodes), nodes=nodes), body)
    for rank, node in enumerate(nodes):
        expected = sorted(
            (r for r in range(len(nodes)) if nodes[r] == node), key=lambda r: (keys[r], r)
        )
        assert got[rank] == expected
