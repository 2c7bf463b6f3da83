"""The jobs a running job spawned: started, watched and torn down with the first job.

:class:`SpawnedJobs` belongs to the :class:`~ompy.orte.launcher.runner.JobRunner`.  For each
``SpawnRequested`` event it plans the new job (:mod:`.spawned`), gives it a control server of
its own in the launcher's universe (so its ranks have their own modex and fences, and the
other jobs reach them by universe rank), and starts its ranks through the runner's plm.  The
runner then knows every process by its *universe rank* (the first job's ranks are universe
ranks ``0..n-1``): its exits, its output, its exceptions and its failures are handled exactly
as the first job's, so a spawned rank that fails ends the whole run with its traceback, and
teardown kills and reaps every job's ranks.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs

from ompy.orte.control.errors import SpawnError

from .errors import LaunchError
from .session import Session, new_jobid
from .spawned import plan_spawn

if TYPE_CHECKING:
    from ompy.orte.control import ControlServer
    from ompy.orte.control.events import SpawnRequested

    from .runner import JobRunner


@attrs.define(eq=False)
class SpawnedJob:
    jobid: str
    base: int
    size: int
    server: ControlServer
    session: Session
    #: The node of each rank, by world rank (for messages).
    nodes: list[str]


def shifted(event: Any, base: int) -> Any:
    """A control event of a spawned job with its ranks turned into universe ranks."""
    from ompy.orte.control import events

    if isinstance(event, events.BadClient):
        return event
    changes: dict[str, Any] = {"rank": event.rank + base}
    if isinstance(event, events.RankLeaving):
        changes["unfinished"] = tuple(rank + base for rank in event.unfinished)
    return attrs.evolve(event, **changes)


class SpawnedJobs:
    """The spawned jobs of one run (see the module documentation)."""

    def __init__(self, runner: JobRunner, secret: bytes) -> None:
        self.runner = runner
        self.secret = secret
        self.jobs: list[SpawnedJob] = []

    def job_of(self, rank: int) -> SpawnedJob | None:
        """The spawned job of a universe rank (None: a rank of the first job)."""
        for job in self.jobs:
            if job.base <= rank < job.base + job.size:
                return job
        return None

    def describe(self, rank: int) -> tuple[str, str, str] | None:
        """``("rank r of spawned job j (size m)", node, "[j rank r] ")`` of a spawned rank
        (the reason, where it ran, the tag of its report's lines), else None."""
        job = self.job_of(rank)
        if job is None:
            return None
        world = rank - job.base
        return (
            f"rank {world} of spawned job {job.jobid} (size {job.size})",
            job.nodes[world],
            f"[{job.jobid} rank {world}] ",
        )

    def connected(self) -> bool:
        return any(job.server.connected_ranks() for job in self.jobs)

    # -- starting one --------------------------------------------------------------------------

    def start(self, request: SpawnRequested, universe: Any) -> None:
        """Start the job ``request`` asks for, and answer it (an error if it cannot start)."""
        runner = self.runner
        if runner._ending is not None:
            request.answer(None, SpawnError("spawn: the run is ending; nothing more starts"))
            return
        busy = Counter(p.node.name for p in runner.plan.job_map.placements)
        for job in self.jobs:
            busy.update(job.nodes)
        base_env = runner.rank_environment()
        try:
            ranks = plan_spawn(
                request.apps, runner.plan.allocation, runner.plan.app.cwd, base_env, busy
            )
        except SpawnError as error:
            request.answer(None, error)
            return
        from ompy.orte.control import ControlServer, environment_for_rank

        jobid = new_jobid()
        size = len(ranks)
        session = Session.create(jobid)
        server = ControlServer(
            jobid,
            size,
            self.secret,
            lambda event: runner._on_control_event(shifted(event, server.base)),
            host=runner.plm.control_host(),
            auth_timeout=runner.connect_timeout,
            exit_grace=runner.exit_grace,
            universe=universe,
        )
        server.start()
        job = SpawnedJob(jobid, server.base, size, server, session, [])
        job.nodes = [r.placement.node.name for r in ranks]
        self.jobs.append(job)
        runner.reporter.note(
            f"job {jobid} spawned by rank {request.rank}: {size} ranks (universe ranks "
            f"{job.base}..{job.base + size - 1}); control server at "
            f"{server.address[0]}:{server.address[1]}"
        )
        node_names: list[str] = []
        for r in ranks:
            if r.placement.node.name not in node_names:
                node_names.append(r.placement.node.name)
        rank_nodes = [r.placement.node_id for r in ranks]
        for spawned in ranks:
            placement = spawned.placement
            env = dict(base_env)
            env.update(spawned.env)
            env.update(
                environment_for_rank(
                    jobid=jobid,
                    rank=placement.rank,
                    size=size,
                    local_rank=placement.local_rank,
                    local_size=placement.local_size,
                    node_id=placement.node_id,
                    node_name=placement.node.name,
                    server=server.address,
                    secret=self.secret,
                    oversubscribed=placement.oversubscribed,
                    session_dir=str(session.path),
                    rank_nodes=rank_nodes,
                    node_names=node_names,
                    universe_size=max(runner.plan.allocation.total_slots, universe.size),
                    universe_base=job.base,
                    parent_port=request.port,
                )
            )
            universe_rank = job.base + placement.rank
            try:
                runner.start_rank(universe_rank, placement, spawned.argv, env, spawned.cwd)
            except LaunchError as error:
                # Some ranks may run already: the run cannot go on consistently.
                request.answer(None, SpawnError(f"spawn: {error}"))
                runner.launch_failed(error)
                return
        request.answer(None, None)

    # -- the end -------------------------------------------------------------------------------

    def close(self) -> list[str]:
        """Close every spawned job's control server and session; what shared memory was left."""
        removed: list[str] = []
        for job in self.jobs:
            job.server.close()
            removed.extend(map(str, job.session.remove()))
        return removed
