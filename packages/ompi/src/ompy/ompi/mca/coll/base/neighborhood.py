"""The neighbours of a neighbor collective, and the order in which MPI matches their blocks.

A neighbor collective sends block ``i`` to ``topo.destinations[i]`` and receives block ``j``
from ``topo.sources[j]`` (the communicator's topology, :mod:`ompy.ompi.mca.topo`); a
``PROC_NULL`` entry (a non-periodic Cartesian boundary) moves nothing and leaves its receive
block as it was.

The only subtle part is an edge that appears twice between the same two processes, where only
the order of the messages tells the blocks apart (they share the call's tag):

- on a **Cartesian** topology a periodic dimension of extent 1 or 2 has the same process as
  its -1 and its +1 neighbour.  MPI (4.1 section 8.6 and its example 8.10, the erratum of
  MPI-3.1 from mpi-forum issue 153) wants the block a process sends in the negative direction
  to land in the receiver's *positive*-direction block and vice versa, which is what happens
  on a larger grid, where the receiver sees the sender as its +1 neighbour.  Sends are started
  in block order (``2d`` then ``2d+1``), so the receives are posted with the two blocks of
  each dimension swapped (``2d+1`` then ``2d``): the first message from the peer in dimension
  ``d`` fills block ``2d+1``.  When the two neighbours differ, the order changes nothing.
- on **graph** and **distributed graph** topologies the k-th edge from a process matches the
  k-th edge to it, in the order the lists give: receives are posted in list order.

Every algorithm posts its receives in :attr:`Neighborhood.receive_order`, then starts its
sends in block order, so non-overtaking point-to-point order does the rest.

MPI restricts neighbor collectives on a general graph (``Create_graph``) to graphs with as many
edges from ``u`` to ``v`` as from ``v`` to ``u``; on any other, some member would wait forever
for a message nobody sends.  Every member knows the whole graph, so :func:`neighborhood` checks
it and every member refuses the call (``ERR_TOPOLOGY``) before anything is posted.  A
distributed graph made by ``Create_dist_graph`` is consistent by construction; the lists given
to ``Create_dist_graph_adjacent`` are the program's responsibility, as in MPI (no member knows
the others').  A module computes the neighbourhood once per communicator and keeps it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import attrs

from ....constants import PROC_NULL
from ....errors import ERR_TOPOLOGY
from ....errors import Exception as MPIException
from ...topo import CART, GraphTopology
from ..interface import CollComm


@attrs.frozen
class Neighborhood:
    """What one member of a neighbor collective exchanges with whom."""

    #: Who sends receive block ``j`` (``PROC_NULL``: nobody, the block is left as it was).
    sources: tuple[int, ...]
    #: Who receives send block ``i`` (``PROC_NULL``: nobody).
    destinations: tuple[int, ...]
    #: The receive blocks in the order their receives must be posted (see the module).
    receive_order: tuple[int, ...]

    def receives(self) -> Iterator[tuple[int, int]]:
        """``(block, source)`` of every receive to post, in posting order (no PROC_NULL)."""
        sources = self.sources
        for block in self.receive_order:
            source = sources[block]
            if source != PROC_NULL:
                yield block, source

    def sends(self) -> Iterator[tuple[int, int]]:
        """``(block, destination)`` of every send to start, in block order (no PROC_NULL)."""
        for block, destination in enumerate(self.destinations):
            if destination != PROC_NULL:
                yield block, destination


def swapped_pairs(count: int) -> tuple[int, ...]:
    """``1, 0, 3, 2, ...``: the receive order of a Cartesian topology of ``count // 2`` dims."""
    return tuple(index ^ 1 for index in range(count))


def asymmetric_edge(index: tuple[int, ...], edges: tuple[int, ...]) -> tuple[int, int] | None:
    """A pair ``(u, v)`` with more edges from ``u`` to ``v`` than from ``v`` to ``u`` in the
    graph of ``index``/``edges`` (MPI's cumulative form), or ``None`` if there is none."""
    counts: Counter[tuple[int, int]] = Counter()
    start = 0
    for node, end in enumerate(index):
        for neighbour in edges[start:end]:
            counts[node, neighbour] += 1
        start = end
    for (u, v), count in counts.items():
        if counts.get((v, u), 0) != count:
            return (u, v) if count > counts.get((v, u), 0) else (v, u)
    return None


def neighborhood(comm: CollComm, operation: str) -> Neighborhood:
    """The neighbours of the calling member of ``comm`` for ``operation`` (for error messages).

    Raises ``ERR_TOPOLOGY`` when ``comm`` has no topology (a neighbor collective needs one) or
    a graph topology whose edges are not symmetric (MPI's restriction, see the module).
    """
    topo = comm.topo
    if topo is None:
        raise MPIException(
            ERR_TOPOLOGY,
            f"{operation}: the communicator {comm.name!r} has no topology; neighbor "
            "collectives run on communicators made by Create_cart, Create_graph or "
            "Create_dist_graph(_adjacent)",
        )
    if isinstance(topo, GraphTopology):
        pair = asymmetric_edge(topo.index, topo.edges)
        if pair is not None:
            u, v = pair
            raise MPIException(
                ERR_TOPOLOGY,
                f"{operation}: the graph of {comm.name!r} has more edges from node {u} to node "
                f"{v} than from {v} to {u}; MPI allows neighbor collectives on a graph topology "
                "only when every pair of nodes has as many edges each way",
            )
    sources, destinations = tuple(topo.sources), tuple(topo.destinations)
    order = swapped_pairs(len(sources)) if topo.kind == CART else tuple(range(len(sources)))
    return Neighborhood(sources, destinations, order)
