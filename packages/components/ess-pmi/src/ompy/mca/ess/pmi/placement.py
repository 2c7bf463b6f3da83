"""Where this rank runs: its node, its node's name, its place among the node's ranks.

Slurm tells every task its node and local index (``SLURM_NODEID``, ``SLURM_LOCALID``), the
step's nodes (``SLURM_STEP_NODELIST``, a hostlist) and tasks per node
(``SLURM_STEP_TASKS_PER_NODE``, run-length encoded).  That fixes this rank's place whatever
the task distribution (block, cyclic, plane, arbitrary), but not every other rank's: the
run-time then learns those from the modex (one more fence at start-up).

Without Slurm's variables, the PMI job attribute ``PMI_process_mapping`` gives the whole map:
``(vector,(first_node,node_count,ranks_per_node),...)``, blocks of ranks laid on consecutive
nodes, the list repeated until every rank is placed (MPICH's reading).  Slurm publishes it
too, but what it writes for a cyclic distribution does not describe where its tasks run, so
Slurm's own variables come first.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping

import attrs

from ompy.orte.hostlist import HostlistError, expand_counts, expand_hostlist

from .wire import PmiError

SLURM_VARIABLES = (
    "SLURM_NODEID",
    "SLURM_LOCALID",
    "SLURM_STEP_NODELIST",
    "SLURM_STEP_TASKS_PER_NODE",
)
_BLOCK = re.compile(r"\((\d+),(\d+),(\d+)\)")
_MAPPING = re.compile(r"\(vector(?:,\(\d+,\d+,\d+\))+\)")


@attrs.frozen
class Placement:
    """This rank's node and local rank; ``rank_nodes`` is the whole map when it is known."""

    node_id: int
    node_name: str
    local_rank: int
    local_size: int
    node_names: tuple[str, ...] = ()
    rank_nodes: tuple[int, ...] = ()


def _int(environ: Mapping[str, str], name: str) -> int:
    text = environ[name]
    if not text.isdigit():
        raise PmiError(f"{name}={text!r} is not a non-negative integer")
    return int(text)


def from_slurm(environ: Mapping[str, str]) -> Placement:
    """This rank's place from the variables Slurm sets for each task of a step."""
    node_id = _int(environ, "SLURM_NODEID")
    local_rank = _int(environ, "SLURM_LOCALID")
    try:
        names = expand_hostlist(environ["SLURM_STEP_NODELIST"])
        counts = expand_counts(environ["SLURM_STEP_TASKS_PER_NODE"])
    except HostlistError as error:
        raise PmiError(f"the Slurm step's layout: {error}") from None
    if len(names) != len(counts):
        raise PmiError(
            f"SLURM_STEP_NODELIST names {len(names)} nodes but SLURM_STEP_TASKS_PER_NODE "
            f"gives {len(counts)} task counts"
        )
    if node_id >= len(names):
        raise PmiError(f"SLURM_NODEID={node_id} is not a node of the step ({len(names)} nodes)")
    if local_rank >= counts[node_id]:
        raise PmiError(
            f"SLURM_LOCALID={local_rank} is outside node {names[node_id]!r}, which runs "
            f"{counts[node_id]} tasks of the step"
        )
    return Placement(node_id, names[node_id], local_rank, counts[node_id])


def parse_process_mapping(text: str, size: int) -> tuple[int, ...]:
    """The node id of every rank from a ``PMI_process_mapping`` value."""
    body = re.sub(r"\s+", "", text)
    if not _MAPPING.fullmatch(body):
        raise PmiError(f"PMI_process_mapping {text!r} is not '(vector,(node,count,ranks),...)'")
    blocks = [(int(a), int(b), int(c)) for a, b, c in _BLOCK.findall(body)]
    if sum(count * per for _first, count, per in blocks) == 0:
        raise PmiError(f"PMI_process_mapping {text!r} places no rank")
    nodes: list[int] = []
    while len(nodes) < size:
        for first, count, per in blocks:
            for node in range(first, first + count):
                nodes.extend([node] * per)
    return tuple(nodes[:size])


def from_mapping(text: str, rank: int, size: int) -> Placement:
    """This rank's place, and every rank's node, from ``PMI_process_mapping``."""
    rank_nodes = parse_process_mapping(text, size)
    node_count = max(rank_nodes) + 1
    node_id = rank_nodes[rank]
    names = [f"node{index}" for index in range(node_count)]
    names[node_id] = socket.gethostname()
    local_rank = rank_nodes[:rank].count(node_id)
    # Other nodes' names are only known by number here; they are used in messages only.
    return Placement(
        node_id,
        names[node_id],
        local_rank,
        rank_nodes.count(node_id),
        node_names=tuple(names),
        rank_nodes=rank_nodes,
    )


def has_slurm_layout(environ: Mapping[str, str]) -> bool:
    return all(environ.get(name) for name in SLURM_VARIABLES)
