"""General graphs (``Create_graph``): checking ``index``/``edges`` and reading neighbours.

Node ``i``'s neighbours are ``edges[index[i-1]:index[i]]`` (``index[-1]`` read as 0); self
loops and repeated edges are allowed, as MPI allows them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....errors import ERR_ARG, ERR_TOPOLOGY
from ....errors import Exception as MPIException
from ..interface import GRAPH, GraphTopology


def standard_index(index: tuple[int, ...], nedges: int) -> tuple[int, ...]:
    """mpi4py's extension: an ``index`` starting with 0 and ending with ``nedges`` (the
    CSR form, one entry longer) loses its leading 0."""
    if index and index[0] == 0 and index[-1] == nedges:
        return index[1:]
    return index


def check_graph(index: Sequence[int], edges: Sequence[int], size: int, call: str) -> None:
    """A graph of at most ``size`` nodes whose ``index`` and ``edges`` agree."""
    nnodes = len(index)
    if nnodes > size:
        raise MPIException(
            ERR_ARG,
            f"{call}: the graph has {nnodes} nodes but the communicator only {size} processes",
        )
    previous = 0
    for node, end in enumerate(index):
        if end < previous:
            raise MPIException(
                ERR_ARG,
                f"{call}: index[{node}] = {end} is smaller than the entry before it "
                f"({previous}); index holds running totals of the nodes' degrees",
            )
        previous = end
    if previous != len(edges):
        raise MPIException(
            ERR_ARG,
            f"{call}: the last index entry is {previous} but {len(edges)} edges are given; "
            "they must be equal",
        )
    for position, target in enumerate(edges):
        if not 0 <= target < nnodes:
            raise MPIException(
                ERR_TOPOLOGY,
                f"{call}: edges[{position}] = {target} is not a node of the graph "
                f"(0..{nnodes - 1})",
            )


def neighbours(index: Sequence[int], edges: Sequence[int], node: int) -> tuple[int, ...]:
    """The neighbours of ``node`` in the order the graph lists them."""
    start = index[node - 1] if node > 0 else 0
    return tuple(edges[start : index[node]])


def graph_topology(index: Sequence[int], edges: Sequence[int], node: int) -> GraphTopology:
    """The topology of the process placed on ``node``."""
    around = neighbours(index, edges, node)
    return GraphTopology(
        kind=GRAPH, sources=around, destinations=around, index=tuple(index), edges=tuple(edges)
    )
