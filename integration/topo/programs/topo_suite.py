"""Every topology constructor and query on COMM_WORLD, at any size, under ``ompy run``.

Run by ``integration/topo/test_topo.py``.  Expectations are computed here from the world's size
and rank by hand (coordinates row-major, neighbours by stepping a coordinate); the topologies'
neighbours are also exercised with real messages (a ``Sendrecv`` along each Cartesian
direction and over each graph edge), so that a wrong neighbour list shows up as wrong data, not
only as a wrong answer to a query.  With ``TOPO_SUITE_REVERSED=1`` the job runs with a topo
component that reverses the ranks (a third-party style component on ``PYTHONPATH``) and checks
that every reordered topology follows it.  Each rank prints one JSON line: its rank and the
names of the checks that passed (a failed check raises; ``ompy run`` reports the traceback).
"""

from __future__ import annotations

import itertools
import json
import os

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
reversed_placement = os.environ.get("TOPO_SUITE_REVERSED") == "1"
passed: list[str] = []


def check(name: str, condition: bool) -> None:
    if not condition:
        raise AssertionError(f"rank {rank}: {name}")
    passed.append(name)


def exchange(comm: MPI.Comm, dest: int, source: int) -> int:
    """Send this rank's world rank to ``dest``, receive ``source``'s (PROC_NULL: -1)."""
    out = np.array([rank], "i")
    got = np.array([-1], "i")
    comm.Sendrecv(out, dest, 7, got, source, 7)
    return int(got[0])


# -- Cartesian ----------------------------------------------------------------------------------

for ndims in (1, 2, 3):
    dims = MPI.Compute_dims(size, ndims)
    check(f"compute_dims {ndims}", int(np.prod(dims)) == size and dims == sorted(dims)[::-1])
    for periods in (True, False):
        cart = world.Create_cart(dims, periods=periods, reorder=True)
        everyone = list(itertools.product(*(range(e) for e in dims)))
        me = cart.Get_rank()
        expected_me = size - 1 - rank if reversed_placement else rank
        check(f"cart rank {ndims} {periods}", me == expected_me == world.Cart_map(dims, periods))
        check(f"cart coords {ndims} {periods}", tuple(cart.coords) == everyone[me])
        check(
            f"cart topo {ndims} {periods}", cart.topo == (dims, [int(periods)] * ndims, cart.coords)
        )
        neighbours = []
        for axis in range(ndims):
            source, dest = cart.Shift(axis, 1)
            for step, said in ((-1, source), (1, dest)):
                moved = list(cart.coords)
                moved[axis] += step
                if periods:
                    moved[axis] %= dims[axis]
                inside = 0 <= moved[axis] < dims[axis]
                check("shift", said == (everyone.index(tuple(moved)) if inside else MPI.PROC_NULL))
            neighbours += [source, dest]
            # the process at the source end sends to us along +1: its world rank arrives
            got = exchange(cart, dest, source)
            want = (
                -1
                if source == MPI.PROC_NULL
                else cart.Get_group().Translate_ranks([source], world.Get_group())[0]
            )
            check(f"cart sendrecv {ndims} {periods}", got == want)
        check(f"cart neighbours {ndims} {periods}", cart.inoutedges == (neighbours, neighbours))
        if ndims > 1:
            sub = cart.Sub([True] + [False] * (ndims - 1))
            check(f"cart sub {ndims}", sub.dims == dims[:1] and sub.coords == cart.coords[:1])
            total = sub.allreduce(1)
            check(f"cart sub size {ndims}", total == dims[0] == sub.Get_size())
            sub.Free()
        cart.Free()

cut = world.Create_cart([size - 1]) if size > 1 else None
if cut is not None:
    check("cart smaller grid", (cut == MPI.COMM_NULL) == (rank == size - 1))
    if cut != MPI.COMM_NULL:
        cut.Free()

try:
    world.Create_cart([size + 1])
except MPI.Exception as error:
    check("cart too big", error.Get_error_class() == MPI.ERR_DIMS and f"only {size}" in str(error))
else:
    raise AssertionError("a grid bigger than the world was accepted")

try:
    world.Create_cart([size] if rank else [size, 1], periods=False)
except MPI.Exception as error:
    check("cart mismatch", error.Get_error_class() == MPI.ERR_ARG)
else:
    if size > 1:
        raise AssertionError("differing grids were accepted")
    passed.append("cart mismatch")

# -- graph: a ring, and a star around rank 0 ----------------------------------------------------

index, edges = [], []
for node in range(size):
    edges += [(node - 1) % size, (node + 1) % size]
    index.append(len(edges))
ring = world.Create_graph(index, edges, reorder=True)
me = ring.Get_rank()
check("graph rank", me == (size - 1 - rank if reversed_placement else rank))
check("graph queries", ring.Get_dims() == (size, 2 * size) and ring.topo == (index, edges))
check("graph neighbours", ring.neighbors == [(me - 1) % size, (me + 1) % size] == ring.inedges)
got = exchange(ring, ring.neighbors[1], ring.neighbors[0])
check(
    "graph sendrecv",
    got == ring.Get_group().Translate_ranks([ring.neighbors[0]], world.Get_group())[0],
)
ring.Free()

try:
    world.Create_graph(list(range(1, size + 1)), [size] * size)
except MPI.Exception as error:
    check("graph bad edge", error.Get_error_class() == MPI.ERR_TOPOLOGY)
else:
    raise AssertionError("an edge to a node outside the graph was accepted")

# -- distributed graphs -------------------------------------------------------------------------

ins, outs = [(rank - 1) % size], [(rank + 1) % size]
adjacent = world.Create_dist_graph_adjacent(ins, outs, [rank + 10], [(rank + 1) % size + 10])
check("dist adjacent", adjacent.Get_dist_neighbors_count() == (1, 1, True))
if not reversed_placement:
    check(
        "dist adjacent lists",
        adjacent.Get_dist_neighbors() == (ins, outs, ([rank + 10], [(rank + 1) % size + 10])),
    )
got = exchange(adjacent, adjacent.outedges[0], adjacent.inedges[0])
check("dist adjacent sendrecv", got == (rank - 1) % size)
adjacent.Free()

# every rank names the edges leaving it: r -> r+1 and r -> r+2 (mod size)
general = world.Create_dist_graph([rank], [2], [(rank + 1) % size, (rank + 2) % size], reorder=True)
new = general.Get_rank()
check("dist general rank", new == (size - 1 - rank if reversed_placement else rank))
ins_now, outs_now, weights = general.Get_dist_neighbors()
check("dist general unweighted", weights is None)
back = general.Get_group().Translate_ranks(ins_now, world.Get_group())
forward = general.Get_group().Translate_ranks(outs_now, world.Get_group())
# in-edges come in the order of the ranks that named them (MPI leaves it to the library)
check("dist general in", back == sorted([(rank - 2) % size, (rank - 1) % size]))
check("dist general out", forward == [(rank + 1) % size, (rank + 2) % size])
general.Free()

try:
    world.Create_dist_graph_adjacent([size] if rank == size - 1 else [], [])
except MPI.Exception as error:
    check("dist bad rank", error.Get_error_class() == MPI.ERR_RANK)
else:
    raise AssertionError("a source outside the communicator was accepted")

print(json.dumps({"rank": rank, "passed": passed}), flush=True)
