"""Distributed graphs: the adjacency of each process, from what every process said.

Both constructors end with every member holding the whole graph as a tuple of edges
``(source, destination, weight)`` in parent ranks (weight 1 when unweighted): for
``Create_dist_graph`` the edges each process named, in rank order; for
``Create_dist_graph_adjacent`` each process's out-edges, after checking that every process's
in-edges say the same (an in-edge nobody sends on would leave a neighbor collective waiting
for ever, so it is an error here rather than a hang later).
"""

from __future__ import annotations

from collections.abc import Sequence

from ....constants import UNDEFINED
from ..interface import DIST_GRAPH, DistGraphTopology

#: An edge: (source, destination, weight).
Edge = tuple[int, int, int]


def adjacency(
    edges: Sequence[Edge], rank: int, placement: Sequence[int], weighted: bool
) -> DistGraphTopology:
    """The topology of parent rank ``rank``: its in- and out-edges in the order of ``edges``,
    with ranks translated to the new communicator's by ``placement``."""
    sources = [(placement[s], w) for s, d, w in edges if d == rank]
    destinations = [(placement[d], w) for s, d, w in edges if s == rank]
    assert all(new != UNDEFINED for new in placement), "a distributed graph keeps everyone"
    return DistGraphTopology(
        kind=DIST_GRAPH,
        sources=tuple(s for s, _ in sources),
        destinations=tuple(d for d, _ in destinations),
        source_weights=tuple(w for _, w in sources) if weighted else None,
        destination_weights=tuple(w for _, w in destinations) if weighted else None,
    )


def adjacent_topology(
    sources: Sequence[int],
    destinations: Sequence[int],
    source_weights: Sequence[int] | None,
    destination_weights: Sequence[int] | None,
    *,
    placement: Sequence[int],
    weighted: bool,
) -> DistGraphTopology:
    """The topology of a process that gave its neighbours itself, in its own order."""

    def weights(given: Sequence[int] | None, degree: int) -> tuple[int, ...] | None:
        if not weighted:
            return None
        return tuple(given) if given is not None else (1,) * degree

    return DistGraphTopology(
        kind=DIST_GRAPH,
        sources=tuple(placement[s] for s in sources),
        destinations=tuple(placement[d] for d in destinations),
        source_weights=weights(source_weights, len(sources)),
        destination_weights=weights(destination_weights, len(destinations)),
    )
