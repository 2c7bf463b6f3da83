"""The job model: hosts and slots (the allocation), where each rank runs (the map), what runs.

These are plain immutable records shared by the launcher and the plm/ras/iof/errmgr frameworks,
so a component sees exactly the same picture of the job as the orchestration code.
"""

from __future__ import annotations

from pathlib import Path

import attrs


@attrs.frozen
class Node:
    """One host of the allocation and the number of ranks it takes before it is oversubscribed."""

    name: str
    slots: int
    #: Whether the user stated the slot count (``host:4``, ``slots=4``) or it was detected.
    slots_given: bool = True


@attrs.frozen
class Allocation:
    """The hosts a job may use, in the order the user gave them, and where that came from."""

    nodes: tuple[Node, ...]
    #: Human description of the source, used in messages: "--host", "hostfile hosts.txt:3", ...
    source: str

    @property
    def total_slots(self) -> int:
        return sum(node.slots for node in self.nodes)


@attrs.frozen
class Placement:
    """Where one rank runs and what it needs to know about its neighbours on that node."""

    rank: int
    node: Node
    node_id: int
    local_rank: int
    local_size: int
    #: More ranks on this node than it has slots or usable cores: ranks should yield when idle.
    oversubscribed: bool


@attrs.frozen
class JobMap:
    """Every rank's placement, indexed by rank."""

    placements: tuple[Placement, ...]
    #: More ranks than the allocation has slots (the condition ``--oversubscribe`` is about).
    oversubscribed: bool

    @property
    def size(self) -> int:
        return len(self.placements)


@attrs.frozen
class AppContext:
    """The program every rank runs, with the environment and directory it runs in."""

    argv: tuple[str, ...]
    cwd: Path
    #: Variables added to (or replacing) the launcher's environment in every rank.
    env: dict[str, str] = attrs.field(factory=dict)
