"""Mapping: which rank runs on which node (``--map-by slot|node``).

``slot`` fills each node up to its slot count before moving to the next (ranks 0,1 on the first
node, 2,3 on the second, ...); ``node`` deals ranks round-robin, one per node.  When the job has
more ranks than slots, the remaining ranks are dealt round-robin over all nodes (this is
oversubscription; the caller decides whether that is allowed).
"""

from __future__ import annotations

from collections import defaultdict

from .errors import LaunchError
from .job import Allocation, JobMap, Node, Placement

MAP_POLICIES = ("slot", "node")


def map_ranks(
    size: int, allocation: Allocation, policy: str = "slot", *, cores: int | None = None
) -> JobMap:
    """Place ``size`` ranks on the allocation's nodes.

    ``cores`` is the number of usable cores of the local machine; a node that gets more ranks
    than that is marked oversubscribed even when its slot count allows them.
    """
    if size < 1:
        raise LaunchError(f"the number of ranks must be at least 1, got {size}")
    if policy not in MAP_POLICIES:
        raise LaunchError(
            f"unknown mapping policy {policy!r} for --map-by; use one of {', '.join(MAP_POLICIES)}"
        )
    nodes = allocation.nodes
    if not nodes:
        raise LaunchError(f"the allocation ({allocation.source}) has no hosts")
    order = _slot_order(nodes, size) if policy == "slot" else _node_order(nodes, size)

    on_node: dict[int, list[int]] = defaultdict(list)
    for rank, node_index in enumerate(order):
        on_node[node_index].append(rank)
    used = sorted(on_node)  # node ids count only nodes that run something, in allocation order
    placements: list[Placement | None] = [None] * size
    for node_id, node_index in enumerate(used):
        node = nodes[node_index]
        ranks = on_node[node_index]
        crowded = len(ranks) > node.slots or (cores is not None and len(ranks) > cores)
        for local_rank, rank in enumerate(ranks):
            placements[rank] = Placement(rank, node, node_id, local_rank, len(ranks), crowded)
    return JobMap(tuple(p for p in placements if p is not None), size > allocation.total_slots)


def _slot_order(nodes: tuple[Node, ...], size: int) -> list[int]:
    order = [index for index, node in enumerate(nodes) for _ in range(node.slots)][:size]
    return order + _round_robin(nodes, size - len(order))


def _node_order(nodes: tuple[Node, ...], size: int) -> list[int]:
    """One rank per node per round, skipping nodes whose slots are used up."""
    free = [node.slots for node in nodes]
    order: list[int] = []
    while len(order) < size and any(free):
        for index in range(len(nodes)):
            if free[index] and len(order) < size:
                free[index] -= 1
                order.append(index)
    return order + _round_robin(nodes, size - len(order))


def _round_robin(nodes: tuple[Node, ...], count: int) -> list[int]:
    return [rank % len(nodes) for rank in range(count)]
