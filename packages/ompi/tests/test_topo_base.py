"""The topo framework's bookkeeping: grids, shifts, sub-grids, graphs and ``Compute_dims``.

The references here are written independently of the code under test: coordinates by nested
loops over the grid (row-major), neighbours by stepping coordinates by hand, and the most
balanced factorization by trying every tuple of divisors.
"""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy.ompi.constants import PROC_NULL, UNDEFINED
from ompy.ompi.errors import ERR_ARG, ERR_DIMS, ERR_RANK, ERR_TOPOLOGY
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.topo import CART, GRAPH
from ompy.ompi.mca.topo.base import cartesian as cart
from ompy.ompi.mca.topo.base import checked_placement, graph, identity

grids = st.lists(st.integers(1, 4), min_size=0, max_size=4)


def row_major(dims):
    """Every coordinate tuple of the grid, in rank order (the last dimension fastest)."""
    return list(itertools.product(*(range(extent) for extent in dims)))


@settings(deadline=None)
@given(grids)
def test_ranks_and_coordinates_are_row_major(dims):
    for rank, coords in enumerate(row_major(dims)):
        assert cart.coords_of(rank, dims) == coords
        assert cart.rank_at(coords, dims) == rank


@settings(deadline=None)
@given(grids, st.data())
def test_neighbours_step_one_coordinate_and_stop_at_closed_boundaries(dims, data):
    periods = data.draw(st.lists(st.booleans(), min_size=len(dims), max_size=len(dims)))
    everyone = row_major(dims)
    for rank, coords in enumerate(everyone):
        topo = cart.cart_topology(dims, periods, rank)
        assert topo.kind == CART and topo.coords == coords
        expected = []
        for axis in range(len(dims)):
            for step in (-1, 1):
                moved = list(coords)
                moved[axis] += step
                if periods[axis]:
                    moved[axis] %= dims[axis]
                inside = 0 <= moved[axis] < dims[axis]
                expected.append(everyone.index(tuple(moved)) if inside else PROC_NULL)
        assert topo.sources == topo.destinations == tuple(expected)


@settings(deadline=None)
@given(grids, st.data())
def test_shift_by_any_displacement(dims, data):
    if not dims:
        return
    periods = data.draw(st.lists(st.booleans(), min_size=len(dims), max_size=len(dims)))
    rank = data.draw(st.integers(0, math.prod(dims) - 1))
    axis = data.draw(st.integers(0, len(dims) - 1))
    disp = data.draw(st.integers(-9, 9))
    topo = cart.cart_topology(dims, periods, rank)

    def at(step):
        coords = list(topo.coords)
        coords[axis] += step
        if periods[axis]:
            coords[axis] %= dims[axis]
        if not 0 <= coords[axis] < dims[axis]:
            return PROC_NULL
        return row_major(dims).index(tuple(coords))

    assert cart.shift(topo, axis, disp, "t") == (at(-disp), at(disp))


def test_shift_outside_the_dimensions_and_coordinates_off_a_closed_grid_are_errors():
    topo = cart.cart_topology((2, 3), (False, True), 4)
    with pytest.raises(MPIException) as caught:
        cart.shift(topo, 2, 1, "Cartcomm.Shift")
    assert caught.value.error_class == ERR_DIMS and "direction 2" in str(caught.value)
    assert cart.rank_of(topo, (1, -1), "t") == 5  # periodic: wraps
    with pytest.raises(MPIException) as caught:
        cart.rank_of(topo, (2, 0), "Cartcomm.Get_cart_rank")
    assert caught.value.error_class == ERR_ARG and "coordinate 2 of dimension 0" in str(
        caught.value
    )
    with pytest.raises(MPIException) as caught:
        cart.coords_checked(topo, 6, "Cartcomm.Get_coords")
    assert caught.value.error_class == ERR_RANK
    with pytest.raises(ValueError, match="3 coordinates"):
        cart.rank_of(topo, (0, 0, 0), "t")


def test_a_grid_needs_positive_extents_and_enough_processes():
    cart.check_grid((2, 2), 5, "t")  # smaller than the communicator: allowed
    for dims, words in (((2, 0), "extent 0"), ((3, 2), "has 6 cells but")):
        with pytest.raises(MPIException) as caught:
            cart.check_grid(dims, 5, "Intracomm.Create_cart")
        assert caught.value.error_class == ERR_DIMS and words in str(caught.value)


@settings(deadline=None)
@given(grids, st.data())
def test_sub_grids_partition_the_grid(dims, data):
    remain = data.draw(st.lists(st.booleans(), min_size=len(dims), max_size=len(dims)))
    periods = [True] * len(dims)
    seen = {}
    for rank in range(math.prod(dims)):
        members, sub = cart.sub_grid(cart.cart_topology(dims, periods, rank), remain)
        assert members[cart.rank_at(sub.coords, sub.dims)] == rank
        assert sub.dims == tuple(e for e, keep in zip(dims, remain, strict=True) if keep)
        seen.setdefault(members, set()).add(rank)
    for members, ranks in seen.items():
        assert set(members) == ranks  # every member of a sub-grid names the same members
    assert sorted(r for ranks in seen.values() for r in ranks) == list(range(math.prod(dims)))


# -- Compute_dims -------------------------------------------------------------------------------


def most_balanced(count, parts):
    """The smallest spread (largest - smallest factor) over every factorization."""
    divisors = [d for d in range(1, count + 1) if count % d == 0]
    spreads = [
        max(t) - min(t) for t in itertools.product(divisors, repeat=parts) if math.prod(t) == count
    ]
    return min(spreads)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 200), st.integers(1, 3))
def test_compute_dims_is_the_most_balanced_non_increasing_factorization(nnodes, ndims):
    dims = cart.compute_dims(nnodes, [0] * ndims, "t")
    assert math.prod(dims) == nnodes
    assert dims == sorted(dims, reverse=True)
    assert max(dims) - min(dims) == most_balanced(nnodes, ndims)


def test_compute_dims_keeps_fixed_entries_and_follows_the_standards_examples():
    assert cart.compute_dims(6, [0, 0], "t") == [3, 2]
    assert cart.compute_dims(7, [0, 0], "t") == [7, 1]
    assert cart.compute_dims(6, [0, 3, 0], "t") == [2, 3, 1]
    assert cart.compute_dims(12, [0, 0, 0], "t") == [3, 2, 2]
    assert cart.compute_dims(1, [], "t") == []
    assert cart.compute_dims(4, [2, 2], "t") == [2, 2]
    for nnodes, dims, words in (
        (7, [0, 3, 0], "cannot make a grid of 7"),
        (4, [3], "cannot make a grid of 4"),
        (4, [-1, 0], "dims[0] is -1"),
        (0, [0], "nnodes is 0"),
    ):
        with pytest.raises(MPIException) as caught:
            cart.compute_dims(nnodes, dims, "Compute_dims")
        assert caught.value.error_class == ERR_DIMS and words in str(caught.value)


# -- graphs -------------------------------------------------------------------------------------


def test_graph_neighbours_and_the_csr_form():
    index, edges = (2, 3, 4), (1, 2, 0, 0)
    assert graph.standard_index((0, 2, 3, 4), 4) == index
    assert graph.standard_index(index, 4) == index
    graph.check_graph(index, edges, 3, "t")
    assert [graph.neighbours(index, edges, n) for n in range(3)] == [(1, 2), (0,), (0,)]
    topo = graph.graph_topology(index, edges, 0)
    assert topo.kind == GRAPH and topo.sources == topo.destinations == (1, 2)


@pytest.mark.parametrize(
    ("index", "edges", "size", "error_class", "words"),
    [
        ((1, 2, 3), (1, 2, 0), 2, ERR_ARG, "3 nodes but the communicator only 2"),
        ((2, 1), (1, 0), 2, ERR_ARG, "index[1] = 1 is smaller"),
        ((1, 2), (1,), 2, ERR_ARG, "last index entry is 2 but 1 edges"),
        ((1, 2), (1, 5), 2, ERR_TOPOLOGY, "edges[1] = 5 is not a node"),
    ],
)
def test_bad_graphs_are_refused_naming_what_is_wrong(index, edges, size, error_class, words):
    with pytest.raises(MPIException) as caught:
        graph.check_graph(index, edges, size, "Intracomm.Create_graph")
    assert caught.value.error_class == error_class
    assert words in str(caught.value)


def test_placements_must_be_a_dense_permutation():
    assert identity(4, 3) == (0, 1, 2, UNDEFINED)
    assert checked_placement([1, 0, UNDEFINED], 3, 2, "x") == (1, 0, UNDEFINED)
    for answer in ([0, 0, UNDEFINED], [0, 1], [0, 2, UNDEFINED], [0, 1, 2]):
        with pytest.raises(MPIException, match="the topo component 'x' answered"):
            checked_placement(answer, 3, 2, "x")
