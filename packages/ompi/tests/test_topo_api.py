"""Topology communicators through the API, on in-process loopback worlds.

The placement tests install throw-away topo components (as ``pip install`` would leave them)
and select them with the ``topo`` parameter, so they hold whether or not ompy-topo-basic is
installed: a component that reverses the ranks must make every reordered topology reversed,
and one that answers nonsense must be named in the error.
"""

import sys
import textwrap

import pytest

from ompy.ompi.api.comm import COMM_NULL, Intracomm
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.api.topo_args import UNWEIGHTED, WEIGHTS_EMPTY
from ompy.ompi.api.topo_create import Compute_dims
from ompy.ompi.api.topocomm import Cartcomm, Distgraphcomm, Graphcomm, Topocomm
from ompy.ompi.constants import PROC_NULL, UNDEFINED
from ompy.ompi.errors import ERR_ARG, ERR_DIMS, ERR_INTERN, ERR_RANK
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.topo import CART, DIST_GRAPH, GRAPH, INTERFACE_VERSION, framework
from ompy.opal.mca import Cardinality
from ompy.opal.mca.entry_points import forget as forget_entry_points
from ompy.opal.mca.params import Registry

COMPONENTS = """
from ompy.ompi.constants import UNDEFINED
from ompy.ompi.mca.topo import TopoComponent, TopoModule
from ompy.opal.mca import Offer

ASKED = []


def reversed_first(size, members):
    return [size - 1 - r if size - 1 - r < members else UNDEFINED for r in range(size)]


class Reverse(TopoModule):
    def cart_map(self, request):
        ASKED.append(("cart", request.dims, request.node_ids))
        members = 1
        for extent in request.dims:
            members *= extent
        return reversed_first(request.size, members)

    def graph_map(self, request):
        ASKED.append(("graph", request.index))
        return reversed_first(request.size, len(request.index))

    def dist_graph_map(self, request):
        ASKED.append(("dist", request.edges, request.weighted, dict(request.hints)))
        return reversed_first(request.size, request.size)


class Twice(TopoModule):
    def cart_map(self, request):
        return [0] * request.size

    graph_map = dist_graph_map = cart_map


class ReverseComponent(TopoComponent):
    name = "reverse"
    version = "1.0"
    default_priority = 90

    def query(self, context):
        return Offer(self.priority, Reverse())


class TwiceComponent(TopoComponent):
    name = "twice"
    version = "1.0"
    default_priority = 1

    def query(self, context):
        return Offer(self.priority, Twice())
"""

ENTRY_POINTS = """
[ompy.mca.topo]
reverse = topo_fixture_components:ReverseComponent
twice = topo_fixture_components:TwiceComponent
"""


@pytest.fixture
def installed(tmp_path, monkeypatch):
    root = tmp_path / "site"
    root.mkdir()
    (root / "topo_fixture_components.py").write_text(textwrap.dedent(COMPONENTS))
    info = root / "topo_fixture-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: topo-fixture\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS.lstrip())
    monkeypatch.syspath_prepend(str(root))
    forget_entry_points()
    yield sys.modules
    forget_entry_points()
    sys.modules.pop("topo_fixture_components", None)


def world_with(size, topo, nodes=None):
    registry = Registry(environ={"OMPY_MCA_topo": topo}, files=[])
    return make_world(size, nodes=nodes, registry=registry)


def test_the_topo_framework_selects_one_component_per_topology():
    assert framework.name == "topo"
    assert framework.group == "ompy.mca.topo"
    assert framework.cardinality is Cardinality.ONE
    assert framework.interface_version == INTERFACE_VERSION


# -- Cartesian ----------------------------------------------------------------------------------


def test_cartesian_communicators_answer_every_query():
    def body(world):
        cart = world.Create_cart([3, 2], periods=[True, False])
        assert type(cart) is Cartcomm and cart.topology == CART and cart.is_topo
        assert not world.is_topo and world.Get_topology() == UNDEFINED
        rank = cart.rank
        assert cart.Get_topo() == ([3, 2], [1, 0], [rank // 2, rank % 2])
        assert (cart.dim, cart.ndim, cart.dims, cart.periods) == (2, 2, [3, 2], [1, 0])
        assert cart.Get_coords(5) == [2, 1] and cart.Get_cart_rank([-1, 1]) == 5
        assert cart.Shift(0, 1) == ((rank - 2) % 6, (rank + 2) % 6)
        assert cart.Shift(1, 1) == (
            (PROC_NULL, rank + 1) if rank % 2 == 0 else (rank - 1, PROC_NULL)
        )
        assert cart.degrees == (4, 4) and cart.inedges == cart.outedges
        assert cart.inoutedges == (cart.inedges, cart.outedges)
        column = cart.Sub([True, False])
        assert type(column) is Cartcomm
        assert (column.size, column.dims, column.coords) == (3, [3], [rank // 2])
        assert column.Get_group().Translate_ranks([column.rank], world.Get_group()) == [rank]
        dup = cart.Dup()
        assert type(dup) is Cartcomm and dup.coords == cart.coords
        split = cart.Split(0, 0)
        assert type(split) is Intracomm and not split.is_topo
        for comm in (column, dup, split, cart):
            comm.Free()
        return rank

    assert run_ranks(make_world(6), body) == list(range(6))


def test_a_grid_smaller_than_the_communicator_leaves_the_rest_out():
    def body(world):
        cart = world.Create_cart([2, 2])
        if world.rank >= 4:
            assert cart == COMM_NULL and type(cart) is Cartcomm
            return None
        try:
            return cart.coords
        finally:
            cart.Free()

    assert run_ranks(make_world(5), body) == [[0, 0], [0, 1], [1, 0], [1, 1], None]


def test_zero_dimensional_grid_has_one_process():
    def body(world):
        cart = world.Create_cart([])
        if world.rank:
            return cart == COMM_NULL
        try:
            return (cart.size, cart.dims, cart.coords, cart.Get_cart_rank([]), cart.inoutedges)
        finally:
            cart.Free()

    assert run_ranks(make_world(2), body) == [(1, [], [], 0, ([], [])), True]


@pytest.mark.parametrize(
    ("dims", "periods", "error", "words"),
    [
        ([5], None, ERR_DIMS, "has 5 cells but the communicator has only 4"),
        ([2, 0], None, ERR_DIMS, "extent 0"),
        ([4], [True, False], ValueError, "periods has 2 entries; expecting 1"),
        (["x"], None, TypeError, "dims[0] must be an int"),
    ],
)
def test_bad_grids_raise_on_every_rank(dims, periods, error, words):
    def body(world):
        with pytest.raises(MPIException if isinstance(error, int) else error) as caught:
            world.Create_cart(dims, periods)
        if isinstance(error, int):
            assert caught.value.error_class == error
        return str(caught.value)

    assert all(words in message for message in run_ranks(make_world(4), body))


def test_grids_that_differ_between_ranks_raise_everywhere_instead_of_hanging():
    def body(world):
        dims = [5] if world.rank == 1 else [2, 2]
        with pytest.raises(MPIException) as caught:
            world.Create_cart(dims)
        return caught.value.error_class, str(caught.value)

    results = run_ranks(make_world(4), body)
    assert results[1][0] == ERR_DIMS and "has 5 cells" in results[1][1]
    for rank in (0, 2, 3):
        assert results[rank][0] == ERR_DIMS and "rank 1 passed bad arguments" in results[rank][1]

    def differing(world):
        with pytest.raises(MPIException) as caught:
            world.Create_cart([4] if world.rank else [2, 2])
        return caught.value.error_class, str(caught.value)

    for error_class, message in run_ranks(make_world(4), differing):
        assert error_class == ERR_ARG and "rank 1 passed the grid [4]" in message


def test_cartesian_queries_check_their_arguments():
    def body(world):
        cart = world.Create_cart([2, 2], [False, True])
        with pytest.raises(MPIException) as caught:
            cart.Get_cart_rank([2, 0])
        assert caught.value.error_class == ERR_ARG
        with pytest.raises(MPIException) as caught:
            cart.Get_coords(4)
        assert caught.value.error_class == ERR_RANK
        with pytest.raises(MPIException) as caught:
            cart.Shift(2, 1)
        assert caught.value.error_class == ERR_DIMS
        with pytest.raises(ValueError):
            cart.Sub([True])
        with pytest.raises(TypeError, match="expecting a general graph communicator"):
            Graphcomm(cart)
        with pytest.raises(TypeError, match="expecting a topology communicator"):
            Topocomm(world)
        cart.Free()

    run_ranks(make_world(4), body)


def test_compute_dims_takes_a_count_or_a_list():
    assert Compute_dims(12, 2) == [4, 3]
    assert Compute_dims(12, [0, 3, 0]) == [2, 3, 2]
    with pytest.raises(MPIException) as caught:
        Compute_dims(5, [2, 0])
    assert caught.value.error_class == ERR_DIMS


# -- graphs -------------------------------------------------------------------------------------


def test_graph_communicators_answer_every_query():
    index, edges = [2, 3, 4, 6], [1, 3, 0, 3, 0, 2]

    def body(world):
        g = world.Create_graph(index, edges)
        assert type(g) is Graphcomm and g.topology == GRAPH
        assert g.Get_dims() == (4, 6) and (g.nnodes, g.nedges) == (4, 6)
        assert g.Get_topo() == (index, edges) == (g.index, g.edges)
        assert [g.Get_neighbors(r) for r in range(4)] == [[1, 3], [0], [3], [0, 2]]
        assert g.Get_neighbors_count(3) == 2
        assert g.neighbors == g.inedges == g.outedges and g.nneighbors == len(g.neighbors)
        with pytest.raises(MPIException) as caught:
            g.Get_neighbors(4)
        assert caught.value.error_class == ERR_RANK
        csr = world.Create_graph([0, *index], edges)
        assert csr.index == index
        for comm in (g, csr):
            comm.Free()
        return True

    assert all(run_ranks(make_world(4), body))


# -- distributed graphs -------------------------------------------------------------------------


def test_distributed_graphs_adjacent_and_general():
    def body(world):
        rank, size = world.rank, world.size
        ins, outs = [(rank - 1) % size], [(rank + 1) % size, (rank + 2) % size]
        ins.append((rank - 2) % size)
        adj = world.Create_dist_graph_adjacent(ins, outs, [5, 6], [7, 8])
        assert type(adj) is Distgraphcomm and adj.topology == DIST_GRAPH
        assert adj.Get_dist_neighbors() == (ins, outs, ([5, 6], [7, 8]))
        assert adj.Get_dist_neighbors_count() == (2, 2, True) and adj.degrees == (2, 2)
        plain = world.Create_dist_graph_adjacent(ins, outs, UNWEIGHTED, None)
        assert plain.Get_dist_neighbors() == (ins, outs, None)
        empty = world.Create_dist_graph_adjacent([], [], WEIGHTS_EMPTY, WEIGHTS_EMPTY)
        assert empty.Get_dist_neighbors() == ([], [], ([], []))
        # rank 0 names every edge r -> r+1 with weight r; the others name none
        sources = list(range(size)) if rank == 0 else []
        degrees = [1] * size if rank == 0 else []
        dests = [(r + 1) % size for r in range(size)] if rank == 0 else []
        weights = list(range(size)) if rank == 0 else WEIGHTS_EMPTY
        general = world.Create_dist_graph(sources, degrees, dests, weights)
        expected = ([(rank - 1) % size], [(rank + 1) % size], ([(rank - 1) % size], [rank]))
        assert general.Get_dist_neighbors() == expected
        for comm in (adj, plain, empty, general):
            comm.Free()
        return True

    assert all(run_ranks(make_world(3), body))


def test_bad_distributed_graphs_raise_on_every_rank():
    def body(world):
        sources = [7] if world.rank == 2 else []
        with pytest.raises(MPIException) as caught:
            world.Create_dist_graph_adjacent(sources, [])
        first = (caught.value.error_class, str(caught.value))
        with pytest.raises(ValueError, match="empty weights"):
            world.Create_dist_graph_adjacent([0], [0], WEIGHTS_EMPTY, WEIGHTS_EMPTY)
        with pytest.raises(MPIException) as caught:
            weights = [1] if world.rank == 0 else UNWEIGHTED
            world.Create_dist_graph([world.rank], [1], [0], weights)
        return first, (caught.value.error_class, str(caught.value))

    results = run_ranks(make_world(3), body)
    assert results[2][0] == (ERR_RANK, results[2][0][1])
    assert "sources[0] is 7" in results[2][0][1]
    assert all("rank 2 passed bad arguments" in r[0][1] for r in results[:2])
    assert all(r[1][0] == ERR_ARG and "weighted everywhere or nowhere" in r[1][1] for r in results)


# -- placement by a component -------------------------------------------------------------------


def test_a_topo_component_places_the_processes_when_reordering_is_allowed(installed):
    def body(world):
        rank = world.rank
        kept = world.Create_cart([2, 2])
        moved = world.Create_cart([2, 2], reorder=True)
        assert kept.rank == rank and moved.rank == 3 - rank
        assert world.Cart_map([2, 2]) == moved.rank
        assert moved.Get_group().Translate_ranks([moved.rank], world.Get_group()) == [rank]
        g = world.Create_graph([1, 2], [1, 0], reorder=True)
        assert (g == COMM_NULL) == (rank < 2)
        assert world.Graph_map([1, 2], [1, 0]) == (3 - rank if rank >= 2 else UNDEFINED)
        d = world.Create_dist_graph_adjacent([(rank - 1) % 4], [(rank + 1) % 4], reorder=True)
        # neighbours are named in the new ranks: parent rank r is 3 - r there
        assert d.rank == 3 - rank
        assert d.Get_dist_neighbors()[:2] == ([3 - (rank - 1) % 4], [3 - (rank + 1) % 4])
        for comm in (kept, moved, g, d):
            if comm != COMM_NULL:
                comm.Free()
        return True

    assert all(run_ranks(world_with(4, "reverse", nodes=[0, 0, 1, 1]), body))
    asked = installed["topo_fixture_components"].ASKED
    assert ("cart", (2, 2), (0, 0, 1, 1)) in asked


def test_a_component_that_answers_no_placement_is_named(installed):
    def body(world):
        with pytest.raises(MPIException) as caught:
            world.Cart_map([2])
        assert caught.value.error_class == ERR_INTERN
        return str(caught.value)

    for message in run_ranks(world_with(2, "twice"), body):
        assert "the topo component 'twice' answered the placement [0, 0]" in message
