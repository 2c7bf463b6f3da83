"""The neighbor collectives of ``basic`` under the MPI API, in-process, on 1 to 6 ranks.

Each size runs one loopback world with ``basic`` as the only coll component and the neighbor
battery of :mod:`neighbor_battery` (every neighbor collective on Cartesian, graph and
distributed-graph communicators, and the 2-D halo exchange against ``Sendrecv``).  The unit
tests below pin the matching rules the battery relies on, on small hand-made neighbourhoods.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.mca.coll.base import neighborhood
from ompy.ompi.mca.coll.base.neighborhood import asymmetric_edge, swapped_pairs
from ompy.ompi.mca.topo import CART, DIST_GRAPH, GRAPH
from ompy.opal.mca.params import Registry

sys.path.insert(0, str(Path(__file__).parent))
import neighbor_battery  # shared with the multi-process tests in integration/neighbor

BASIC_ONLY = Registry(environ={"OMPY_MCA_coll": "basic"}, files=[])


@pytest.mark.parametrize("size", range(1, 7))
def test_every_neighbor_collective_on_every_topology(size):
    worlds = make_world(size, registry=BASIC_ONLY)
    results = run_ranks(
        worlds, lambda comm: neighbor_battery.run_neighbor_battery(MPI, comm), timeout=240
    )
    for passed in results:
        assert "graph ring alltoallw" in passed
        assert "dist graph objects" in passed
        assert any(name.startswith("halo ") for name in passed)


@attrs.frozen
class _Topo:
    kind: int
    sources: tuple[int, ...]
    destinations: tuple[int, ...]


@attrs.frozen
class _Comm:
    topo: _Topo | None
    name: str = "test"


def test_cartesian_receives_are_posted_with_each_dimensions_blocks_swapped():
    edges = neighborhood(_Comm(_Topo(CART, (3, 3, -2, 5), (3, 3, -2, 5))), "t")
    assert edges.receive_order == (1, 0, 3, 2)
    assert list(edges.receives()) == [(1, 3), (0, 3), (3, 5)]  # PROC_NULL skipped
    assert list(edges.sends()) == [(0, 3), (1, 3), (3, 5)]
    assert swapped_pairs(0) == ()


@pytest.mark.parametrize("kind", [GRAPH, DIST_GRAPH])
def test_graph_receives_are_posted_in_list_order(kind):
    edges = neighborhood(_Comm(_Topo(kind, (2, 0, 2), (1,))), "t")
    assert edges.receive_order == (0, 1, 2)
    assert list(edges.receives()) == [(0, 2), (1, 0), (2, 2)]
    assert list(edges.sends()) == [(0, 1)]


def test_a_communicator_without_topology_is_refused_with_err_topology():
    with pytest.raises(MPI.Exception) as raised:
        neighborhood(_Comm(None), "neighbor_alltoall")
    assert raised.value.Get_error_class() == MPI.ERR_TOPOLOGY
    assert "neighbor_alltoall" in str(raised.value)


def test_two_ranks_on_a_periodic_ring_swap_their_blocks_as_mpi_defines():
    """Both neighbours are the other rank: the block sent to the left lands in its right."""
    worlds = make_world(2, registry=BASIC_ONLY)

    def body(world):
        ring = world.Create_cart([2], [True])
        rank = ring.Get_rank()
        send = np.array([10 * rank + 0, 10 * rank + 1], dtype=np.int64)  # to left, to right
        recv = np.zeros(2, dtype=np.int64)
        ring.Neighbor_alltoall(send, recv)
        blocking = recv.copy()
        ring.Ineighbor_alltoall(send, recv).Wait()
        objects = ring.neighbor_alltoall([("left", rank), ("right", rank)])
        ring.Free()
        return blocking.tolist(), recv.tolist(), objects

    (b0, n0, o0), (b1, n1, o1) = run_ranks(worlds, body)
    # recv[0] comes from the left neighbour, which sent it rightwards (its block 1).
    assert b0 == n0 == [11, 10]
    assert b1 == n1 == [1, 0]
    assert o0 == [("right", 1), ("left", 1)]
    assert o1 == [("right", 0), ("left", 0)]


def test_a_one_rank_periodic_grid_sends_to_itself_across():
    (world,) = make_world(1, registry=BASIC_ONLY)
    grid = world.Create_cart([1, 1], [True, True])
    recv = np.zeros(4, dtype=np.int64)
    grid.Neighbor_alltoall(np.arange(4, dtype=np.int64), recv)
    assert recv.tolist() == [1, 0, 3, 2]
    assert grid.neighbor_allgather("me") == ["me"] * 4
    grid.Free()


def test_open_boundaries_leave_their_receive_blocks_untouched():
    worlds = make_world(3, registry=BASIC_ONLY)

    def body(world):
        line = world.Create_cart([3], [False])
        rank = line.Get_rank()
        recv = np.full(2, -1, dtype=np.int64)
        line.Neighbor_allgather(np.array([rank], dtype=np.int64), recv)
        got = line.neighbor_allgather(rank)
        line.Free()
        return recv.tolist(), got

    assert run_ranks(worlds, body) == [
        ([-1, 1], [None, 1]),
        ([0, 2], [0, 2]),
        ([1, -1], [1, None]),
    ]


def test_basic_serves_every_neighbor_operation():
    (world,) = make_world(1, registry=BASIC_ONLY)
    cart = world.Create_cart([1], [False])
    table = cart._c.coll
    for operation in MPI_NEIGHBOR_OPERATIONS:
        assert table.provider(operation) == "basic", operation
    cart.Free()


MPI_NEIGHBOR_OPERATIONS = (
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
    "ineighbor_allgather",
    "ineighbor_allgatherv",
    "ineighbor_alltoall",
    "ineighbor_alltoallv",
    "ineighbor_alltoallw",
    "neighbor_allgather_object",
    "neighbor_alltoall_object",
)


def test_an_asymmetric_graph_is_refused_on_every_member_before_anything_moves():
    """Node 0 lists node 1 twice, node 1 lists node 0 once: MPI forbids neighbor collectives."""
    worlds = make_world(2, registry=BASIC_ONLY)

    def body(world):
        graph = world.Create_graph([2, 3], [1, 1, 0])
        refusals = []
        for call in (
            lambda: graph.Neighbor_allgather(np.zeros(1), np.zeros(graph.indegree)),
            lambda: graph.Ineighbor_alltoall(np.zeros(graph.outdegree), np.zeros(graph.indegree)),
            lambda: graph.neighbor_alltoall([0] * graph.outdegree),
        ):
            with pytest.raises(MPI.Exception) as raised:
                call()
            refusals.append((raised.value.Get_error_class(), str(raised.value)))
        world.Barrier()  # nothing was left in flight: the world still works
        graph.Free()
        return refusals

    for refusals in run_ranks(worlds, body):
        for error_class, message in refusals:
            assert error_class == MPI.ERR_TOPOLOGY
            assert "more edges from node 0 to node 1 than from 1 to 0" in message


@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)))
        )
    ),
    st.randoms(use_true_random=False),
)
def test_a_graph_is_symmetric_exactly_when_every_pair_has_as_many_edges_each_way(case, rng):
    nodes, pairs = case
    lists = [[] for _ in range(nodes)]
    for u, v in pairs:  # undirected edges: one entry at each end (a self-loop: one)
        lists[u].append(v)
        if u != v:
            lists[v].append(u)
    for neighbours in lists:
        rng.shuffle(neighbours)
    index = tuple(itertools.accumulate(len(neighbours) for neighbours in lists))
    edges = tuple(v for neighbours in lists for v in neighbours)
    assert asymmetric_edge(index, edges) is None
    u, v = rng.randrange(nodes), rng.randrange(nodes)
    if u != v:  # one more directed edge u -> v breaks it, and is named
        lists[u].append(v)
        index = tuple(itertools.accumulate(len(neighbours) for neighbours in lists))
        edges = tuple(v for neighbours in lists for v in neighbours)
        assert asymmetric_edge(index, edges) == (u, v)


class _Unloadable:
    """Pickles, but refuses to be unpickled: the receiving side's decoding fails."""

    def __reduce__(self):
        return (_refuse, ())


def _refuse():
    raise RuntimeError("this object refuses to be unpickled")


#: What the culprit does wrong in each case, and the call it makes.
_BAD = {
    "allgather unpicklable": lambda c: c.neighbor_allgather(lambda: None),
    "allgather unloadable": lambda c: c.neighbor_allgather(_Unloadable()),
    "alltoall unpicklable": lambda c: c.neighbor_alltoall([lambda: None] * c.outdegree),
    "alltoall unloadable": lambda c: c.neighbor_alltoall([_Unloadable()] * c.outdegree),
    "alltoall length": lambda c: c.neighbor_alltoall([0] * (c.outdegree + 1)),
}
#: What every other member calls in the same case.
_GOOD = {
    "allgather": lambda c: c.neighbor_allgather(c.Get_rank()),
    "alltoall": lambda c: c.neighbor_alltoall([c.Get_rank()] * c.outdegree),
}


def _outcome(call, comm):
    try:
        call(comm)
    except MPI.Exception as error:
        return ("peer", str(error))
    except Exception as error:  # this member's own failure
        return ("own", type(error).__name__)
    return ("ok",)


@pytest.mark.parametrize("size", [1, 2, 3, 5])
def test_a_member_whose_objects_fail_still_plays_its_part_so_no_neighbour_waits(size):
    """An unpicklable or undecodable object, or a wrong number of items, on one member: every
    member returns or raises (the culprit its own error, a neighbour an MPI.Exception naming
    it), and the next collective works."""

    def play(world):
        rank = world.Get_rank()
        outcomes = {}
        ring_edges = [v for u in range(size) for v in ((u + 1) % size, (u - 1) % size)]
        topologies = {
            "ring": world.Create_cart([size], [True]),
            "graph": world.Create_graph(list(range(2, 2 * size + 1, 2)), ring_edges),
        }
        for topology, comm in topologies.items():
            for culprit in range(size):
                for case, bad in _BAD.items():
                    call = bad if rank == culprit else _GOOD[case.split()[0]]
                    outcomes[topology, case, culprit] = _outcome(call, comm)
                    assert world.allreduce(1) == size, (topology, case, culprit)
            comm.Free()
        return outcomes

    results = run_ranks(make_world(size, registry=BASIC_ONLY), play, timeout=240)
    for key in results[0]:
        _, case, culprit = key
        for rank, outcomes in enumerate(results):
            outcome = outcomes[key]
            if outcome[0] == "peer":
                assert f"rank {culprit} failed" in outcome[1], (key, rank, outcome)
            if rank == culprit and "unloadable" not in case:
                assert outcome[0] == "own", (key, outcome)  # its objects had to be encoded
        neighbour = (culprit + 1) % size
        if neighbour != culprit:  # the culprit's neighbours learn of it (or fail to decode)
            want = "own" if "unloadable" in case else "peer"
            assert results[neighbour][key][0] == want, (key, results[neighbour][key])


@settings(max_examples=30, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12),
        )
    ),
    st.randoms(use_true_random=False),
)
def test_on_any_distributed_graph_the_kth_edge_from_a_process_matches_the_kth_edge_to_it(case, rng):
    """A random directed multigraph (duplicate edges, self-loops, processes without edges);
    each process lists its in-edges in a random order.  Every edge carries its own id, so the
    result shows which send block landed in which receive block."""
    size, edges = case
    outgoing = [[(i, v) for i, (u, v) in enumerate(edges) if u == rank] for rank in range(size)]
    incoming = [[u for u, v in edges if v == rank] for rank in range(size)]
    for sources in incoming:
        rng.shuffle(sources)

    def expected(rank):
        """Receive block j: the id of the k-th edge to rank from sources[j] (k-th occurrence)."""
        ids, seen = [], {}
        for source in incoming[rank]:
            k = seen[source] = seen.get(source, -1) + 1
            ids.append([i for i, v in outgoing[source] if v == rank][k])
        return ids

    def body(world):
        rank = world.Get_rank()
        destinations = [v for _, v in outgoing[rank]]
        graph = world.Create_dist_graph_adjacent(incoming[rank], destinations)
        send = np.array([i for i, _ in outgoing[rank]], dtype=np.int64)
        recv = np.full(len(incoming[rank]), -1, dtype=np.int64)
        graph.Neighbor_alltoall(send, recv)
        blocking = recv.tolist()
        recv[:] = -1
        graph.Ineighbor_alltoallv(send, recv).Wait()
        objects = graph.neighbor_alltoall([("edge", i) for i, _ in outgoing[rank]])
        graph.Free()
        return blocking, recv.tolist(), [item[1] for item in objects]

    results = run_ranks(make_world(size, registry=BASIC_ONLY), body, timeout=60)
    for rank, (blocking, nonblocking, objects) in enumerate(results):
        assert blocking == nonblocking == objects == expected(rank), (rank, edges, incoming)
