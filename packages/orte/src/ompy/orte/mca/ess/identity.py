"""Who this process is within its job: the answer every ess module gives.

An :class:`Identity` is checked when it is built, so a launcher that hands out an impossible
identity (rank 4 of a job of size 4) is caught where the mistake is made, not later when a
transport indexes an array with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

#: Length of a job secret in bytes (the launcher draws it with :func:`secrets.token_bytes`).
SECRET_SIZE = 32


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise ValueError(f"identity field '{attribute.name}' must be >= 0, got {value}")


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 1:
        raise ValueError(f"identity field '{attribute.name}' must be >= 1, got {value}")


def _not_empty(instance: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        raise ValueError(f"identity field '{attribute.name}' must not be empty")


def _server(instance: Any, attribute: attrs.Attribute[Any], value: tuple[str, int] | None) -> None:
    if value is None:
        return
    host, port = value
    if not host or not (0 < port < 65536):
        raise ValueError(f"identity field 'server' must be (host, port 1..65535), got {value!r}")


def _strict_int(name: str) -> Callable[[Any, attrs.Attribute[Any], object], None]:
    def check(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"identity field '{name}' must be an int, got {value!r}")

    return check


def _ints(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(values)


def _strs(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


_INT = {name: _strict_int(name) for name in ("rank", "size", "local_rank", "local_size", "node_id")}


@attrs.frozen
class Identity:
    """This process's place in its job.

    ``server`` and ``secret`` are ``None`` for a singleton (a program started without a
    launcher), which has nobody to talk to.  The secret is left out of ``repr`` so that an
    identity can be logged without leaking it.
    """

    jobid: str = attrs.field(validator=_not_empty)
    rank: int = attrs.field(validator=[_INT["rank"], _non_negative])
    size: int = attrs.field(validator=[_INT["size"], _positive])
    local_rank: int = attrs.field(validator=[_INT["local_rank"], _non_negative])
    local_size: int = attrs.field(validator=[_INT["local_size"], _positive])
    node_id: int = attrs.field(validator=[_INT["node_id"], _non_negative])
    node_name: str = attrs.field(validator=_not_empty)
    oversubscribed: bool
    session_dir: str = attrs.field(validator=_not_empty)
    server: tuple[str, int] | None = attrs.field(default=None, validator=_server)
    secret: bytes | None = attrs.field(default=None, repr=False)
    singleton: bool = False
    #: The node id of every rank, in rank order (the job map), when the launcher gave it.
    #: With it MPI knows where every peer runs without a modex exchange; empty otherwise.
    rank_nodes: tuple[int, ...] = attrs.field(default=(), converter=_ints)
    #: The name of every node of the job, by node id (given together with ``rank_nodes``).
    node_names: tuple[str, ...] = attrs.field(default=(), converter=_strs)
    #: Started directly by a resource manager (``srun``): no control server (``server`` is
    #: None); the ess module's job services stand in for it.  A secret is still required:
    #: the transports authenticate their peers with it.
    direct: bool = False
    #: How many processes the allocation has room for (``MPI.UNIVERSE_SIZE``): its slots, at
    #: least the job's size; 0 when the launcher did not say (then it is the job's size).
    universe_size: int = attrs.field(default=0, validator=_strict_int("universe_size"))
    #: The job's first universe rank: how the launcher's other jobs name this job's ranks
    #: (rank ``r`` is universe rank ``universe_base + r``; see ompy.orte.control.universe).
    universe_base: int = attrs.field(
        default=0, validator=[_strict_int("universe_base"), _non_negative]
    )
    #: A spawned job's port, where its MPI initialization meets its parents; "" otherwise.
    parent_port: str = ""

    def __attrs_post_init__(self) -> None:
        if self.rank >= self.size:
            raise ValueError(f"rank {self.rank} is outside a job of size {self.size}")
        if self.local_rank >= self.local_size:
            raise ValueError(
                f"local rank {self.local_rank} is outside a node with {self.local_size} ranks"
            )
        if self.local_size > self.size:
            raise ValueError(
                f"local size {self.local_size} is larger than the job's size {self.size}"
            )
        if self.singleton and (self.size != 1 or self.server or self.secret is not None):
            raise ValueError("a singleton is a job of size 1 without server and secret")
        if self.secret is not None and len(self.secret) != SECRET_SIZE:
            raise ValueError(f"the job secret must be {SECRET_SIZE} bytes, got {len(self.secret)}")
        if self.universe_size and self.universe_size < self.size:
            raise ValueError(
                f"the universe size {self.universe_size} is smaller than the job's size {self.size}"
            )
        if self.rank_nodes or self.node_names:
            self._check_job_map()
        if self.direct:
            if self.singleton or self.server is not None or self.secret is None:
                raise ValueError(
                    "a directly launched rank has the job secret but no control server, and "
                    "is not a singleton"
                )
        elif not self.singleton and (self.server is None or self.secret is None):
            raise ValueError(
                "a launched rank needs the address of the launcher's control server and the "
                "job secret"
            )

    def _check_job_map(self) -> None:
        nodes, names = self.rank_nodes, self.node_names
        if len(nodes) != self.size:
            raise ValueError(f"the job map names {len(nodes)} ranks, the job has {self.size}")
        if not all(isinstance(n, int) and 0 <= n < len(names) for n in nodes):
            raise ValueError(f"the job map's node ids must be 0..{len(names) - 1}, got {nodes}")
        if nodes[self.rank] != self.node_id or names[self.node_id] != self.node_name:
            raise ValueError(
                f"the job map puts rank {self.rank} on node {nodes[self.rank]} "
                f"({names[nodes[self.rank]]!r}), not on node {self.node_id} ({self.node_name!r})"
            )
        if nodes.count(self.node_id) != self.local_size or self.local_rank_of(self.rank) != (
            self.local_rank
        ):
            raise ValueError("the job map disagrees with this rank's local rank or local size")

    @property
    def universe(self) -> int:
        """``MPI.UNIVERSE_SIZE``: the universe size the launcher gave, else the job's size."""
        return self.universe_size or self.size

    def local_rank_of(self, rank: int) -> int:
        """The local rank of ``rank`` by the job map: how many ranks before it share its node."""
        node = self.rank_nodes[rank]
        return self.rank_nodes[:rank].count(node)
