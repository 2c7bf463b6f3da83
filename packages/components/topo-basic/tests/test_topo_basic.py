"""The basic topo component: it always offers, and its placements keep the parent's order.

Selected alone (``topo = basic``), reordered topologies through the API must come out exactly
as the same topologies without reordering.
"""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ompy.mca.topo.basic import BasicTopoComponent, BasicTopoModule
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.constants import UNDEFINED
from ompy.ompi.mca.topo import (
    CART,
    DIST_GRAPH,
    GRAPH,
    CartMapRequest,
    DistGraphMapRequest,
    GraphMapRequest,
    TopoQuery,
)
from ompy.ompi.mca.topo.base import TopoSelection
from ompy.opal.mca.params import Registry

BASIC_ONLY = Registry(environ={"OMPY_MCA_topo": "basic"}, files=[])


@pytest.mark.parametrize("kind", [CART, GRAPH, DIST_GRAPH])
def test_basic_offers_for_every_kind_at_its_priority(kind):
    component = BasicTopoComponent(Registry(environ={}, files=[]))
    component.register_params()
    offer = component.query(TopoQuery(kind, 4))
    assert offer is not None and offer.priority == 10
    assert isinstance(offer.module, BasicTopoModule)


@given(st.integers(1, 12), st.lists(st.integers(1, 3), max_size=3))
def test_placements_keep_the_order_and_leave_out_the_rest(size, dims):
    module = BasicTopoModule()
    nodes = (0,) * size
    cells = 1
    for extent in dims:
        cells *= extent
    if cells <= size:
        request = CartMapRequest(size=size, node_ids=nodes, dims=tuple(dims), periods=())
        placed = list(module.cart_map(request))
        assert placed == [r if r < cells else UNDEFINED for r in range(size)]
    index = tuple(range(1, size + 1))
    request_graph = GraphMapRequest(size=size, node_ids=nodes, index=index, edges=(0,) * size)
    assert list(module.graph_map(request_graph)) == list(range(size))
    request_dist = DistGraphMapRequest(size=size, node_ids=nodes, edges=(), weighted=False)
    assert list(module.dist_graph_map(request_dist)) == list(range(size))


def test_the_framework_selects_basic_and_checks_its_answer():
    selection = TopoSelection(BASIC_ONLY)
    name, module = selection.module(CART, 3)
    assert name == "basic" and isinstance(module, BasicTopoModule)
    request = CartMapRequest(size=3, node_ids=(0, 0, 0), dims=(2,), periods=(False,))
    assert selection.cart_map(request, 2) == (0, 1, UNDEFINED)
    selection.finalize()
    assert selection.opened() is None


def test_reordered_topologies_are_the_unreordered_ones():
    def body(world):
        rank = world.rank
        cart = world.Create_cart([2, 2], periods=True, reorder=True)
        graph = world.Create_graph([1, 2, 3, 4], [1, 2, 3, 0], reorder=True)
        dist = world.Create_dist_graph([rank], [1], [(rank + 1) % 4], reorder=True)
        try:
            return (
                cart.rank,
                world.Cart_map([2, 2]),
                graph.rank,
                world.Graph_map([1, 2], [1, 0]),
                dist.rank,
                dist.outedges,
            )
        finally:
            for comm in (cart, graph, dist):
                comm.Free()

    results = run_ranks(make_world(4, registry=BASIC_ONLY), body)
    for rank, result in enumerate(results):
        assert result == (rank, rank, rank, rank if rank < 2 else UNDEFINED, rank, [(rank + 1) % 4])
