"""Planning a job that a running job asked for (``Comm.Spawn``/``Spawn_multiple``).

The launcher runs a spawned job as it runs the first one (same plm, iof, errmgr, teardown),
from the same allocation: this module turns the request's applications into placements and
checked programs, or a :class:`~ompy.orte.control.errors.SpawnError` that names what is
wrong, before anything starts.  What a request may say (MPI's reserved info keys):

* ``argv`` and ``maxprocs``: the program and how many copies;
* ``host``: the allocation's host to run them on (one name); the allocation's nodes in order
  otherwise, by slot as ``--map-by slot`` does;
* ``wdir``: the working directory (relative paths from the launcher's);
* ``env``: variables added to the ranks' environment.

A spawned job may take more ranks than the allocation has free slots: its ranks are then
marked oversubscribed (they yield when idle), as the universe size only advises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ompy.orte.control.errors import SpawnError

from .errors import LaunchError
from .job import Allocation, JobMap, Placement
from .mapping import map_ranks
from .program import resolve_program


@attrs.frozen
class SpawnedRank:
    """One rank of a spawned job: where it runs and what it runs."""

    placement: Placement
    argv: tuple[str, ...]
    cwd: Path
    #: The application's own variables (``env`` info key), added to the job's environment.
    env: dict[str, str]


def _field(app: Mapping[str, Any], key: str, kind: type, what: str) -> Any:
    value = app.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SpawnError(f"spawn: {what} must be {kind.__name__}, got {value!r}")
    return value


def plan_spawn(
    apps: Sequence[Any],
    allocation: Allocation,
    cwd: Path,
    base_env: Mapping[str, str],
    busy: Mapping[str, int],
) -> list[SpawnedRank]:
    """The ranks of the spawned job, in rank order (applications one after another).

    ``busy`` counts the ranks already running on each host (oversubscription marks).
    """
    if not apps:
        raise SpawnError("spawn: no application given")
    chosen: list[tuple[Placement, tuple[str, ...], Path, dict[str, str]]] = []
    for index, app in enumerate(apps):
        if not isinstance(app, Mapping):
            raise SpawnError(f"spawn: application {index} is not a map: {app!r}")
        argv = [str(arg) for arg in _field(app, "argv", list, "argv")]
        count = _field(app, "maxprocs", int, "maxprocs")
        if count < 1:
            raise SpawnError(f"spawn: maxprocs must be at least 1, got {count}")
        env = app.get("env") or {}
        if not isinstance(env, Mapping):
            raise SpawnError(f"spawn: env must be a map of variables, got {env!r}")
        env = {str(k): str(v) for k, v in env.items()}
        wdir = Path(str(app.get("wdir") or cwd))
        where = wdir if wdir.is_absolute() else cwd / wdir
        if not where.is_dir():
            raise SpawnError(f"spawn: the working directory {str(where)!r} does not exist")
        nodes = allocation.nodes
        host = app.get("host")
        if host:
            nodes = tuple(node for node in nodes if node.name == host)
            if not nodes:
                names = ", ".join(node.name for node in allocation.nodes)
                raise SpawnError(
                    f"spawn: host {host!r} is not in the allocation ({names}); spawned "
                    f"processes run on the hosts 'ompy run' was given"
                )
        try:
            program = resolve_program(argv, where, {**base_env, **env})
        except LaunchError as error:
            raise SpawnError(f"spawn: {error}") from None
        job_map: JobMap = map_ranks(count, Allocation(nodes, allocation.source), "slot")
        for placement in job_map.placements:
            chosen.append((placement, program, where, env))
    return _renumber(chosen, busy)


def _renumber(
    chosen: list[tuple[Placement, tuple[str, ...], Path, dict[str, str]]],
    busy: Mapping[str, int],
) -> list[SpawnedRank]:
    """One job of all the applications: ranks, node ids and local ranks across all of them."""
    node_ids: dict[str, int] = {}
    per_node = Counter(placement.node.name for placement, *_ in chosen)
    seen: Counter[str] = Counter()
    ranks = []
    for rank, (placement, argv, cwd, env) in enumerate(chosen):
        name = placement.node.name
        node_id = node_ids.setdefault(name, len(node_ids))
        oversubscribed = per_node[name] + busy.get(name, 0) > placement.node.slots
        ranks.append(
            SpawnedRank(
                Placement(
                    rank,
                    placement.node,
                    node_id,
                    seen[name],
                    per_node[name],
                    oversubscribed or placement.oversubscribed,
                ),
                argv,
                cwd,
                env,
            )
        )
        seen[name] += 1
    return ranks
