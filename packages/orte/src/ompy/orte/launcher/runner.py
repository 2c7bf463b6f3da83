"""Running a planned job: launch every rank, watch it, tear the job down, report.

The :class:`JobRunner` owns the job from the first fork to the removal of its session
directory.  It runs one event loop (:class:`ompy.opal.eventloop.EventLoop`) in the main thread:
everything it waits for is a readable descriptor (the ranks' output pipes, registered by the iof
module; one pidfd per rank; the loop's wake-up pipe, written by the control server's thread
and by the signal machinery), so any number of ranks costs no thread.  It reacts to:

* a rank's exit (its pidfd becomes readable): asked to errmgr, which may declare the job failed;
* control-plane events (connect, finalize, abort, uncaught exception), posted by the control
  server's thread to a queue;
* signals to the launcher, caught by handlers that only record them:

  - SIGINT (Ctrl-C): terminate the job (SIGTERM, then SIGKILL after ``orte_abort_timeout``),
    exit 130; a second Ctrl-C kills the ranks at once.
  - SIGTERM, SIGHUP: forwarded to every rank's process group; ranks that are still alive after
    ``orte_abort_timeout`` are killed; exit 128 + the signal number.
  - SIGUSR1: print every running rank's Python stack; the job continues.

* ``--timeout``: print every running rank's Python stack, terminate the job, exit 124 (the code
  of coreutils' ``timeout``).

Teardown always ends with SIGKILL to every rank's process group, so nothing a rank started
survives the job, and with the removal of the session directory and the job's shared memory.
"""

from __future__ import annotations

import collections
import os
import re
import secrets
import signal
import threading
import time
from typing import TYPE_CHECKING, Any

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.opal.tally import Tally
from ompy.orte.control.universe import Universe

from .children import SpawnedJobs
from .errors import LaunchError
from .plan import Plan
from .report import Reporter
from .session import Session, new_jobid, sweep_stale

if TYPE_CHECKING:
    from collections.abc import Iterator

    from ompy.orte.mca.errmgr import ErrmgrModule, RankEvent, RankExited
    from ompy.orte.mca.iof import IofModule
    from ompy.orte.mca.plm import PlmModule, RankProcess

EXIT_INTERRUPTED = 130
EXIT_TIMEOUT = 124
#: A rank that reported an uncaught exception is judged when it exits, or after this long.
#: Judging at the exit lets a rank that failed first, and whose failure made this rank's
#: fence or receive raise, be reported as the cause.
RAISED_GRACE = 1.0
#: Numbers in a refusal's reason (ranks, ports) vary; the aggregate counts reasons without them.
_DIGITS = re.compile(r"\d+")
_HANDLED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGUSR1")


def rank_base_environment(app_env: dict[str, str]) -> dict[str, str]:
    """What every rank's environment holds before its identity variables are added.

    The launcher's own environment (less an enclosing job's command-line names) plus the
    application's ``-x`` and ``--mca`` variables.
    """
    base = {k: v for k, v in os.environ.items() if k != "OMPY_MCA_CLI_NAMES"}
    base.update(app_env)
    return base


@attrs.define
class _Ending:
    """Why the job ends early, and the code ompy run returns."""

    exit_code: int
    message: str
    detail: str = ""
    detail_tag: str = ""
    #: The failing rank, when a rank caused it (its traceback may still arrive).
    rank: int | None = None
    reason: str = ""


@attrs.define
class _Rank:
    rank: int
    pid: int
    process: RankProcess
    returncode: int | None = None


class JobRunner:
    """Runs one planned job (see the module documentation); :meth:`run` returns the exit code."""

    def __init__(
        self,
        plan: Plan,
        registry: Any,
        reporter: Reporter,
        *,
        plm: PlmModule,
        iof: IofModule,
        errmgr: ErrmgrModule,
        jobid: str | None = None,
    ) -> None:
        self.plan = plan
        self.reporter = reporter
        self.plm = plm
        self.errmgr = errmgr
        self.jobid = jobid or new_jobid()
        self.size = plan.job_map.size
        self.abort_timeout = float(registry.get("orte_abort_timeout"))
        self.stack_timeout = float(registry.get("orte_stack_timeout"))
        self.drain_timeout = float(registry.get("orte_drain_timeout"))
        self.connect_timeout = float(registry.get("orte_connect_timeout"))
        self.exit_grace = float(registry.get("orte_exit_grace"))
        self._iof = iof
        self._loop = EventLoop()
        self._events: collections.deque = collections.deque()
        self._signals: list[int] = []
        self._ranks: dict[int, _Rank] = {}
        self._by_exit_fd: dict[int, _Rank] = {}
        self._finalized: set[int] = set()
        self._tracebacks: dict[int, str] = {}
        #: Ranks whose exception says another rank failed first (judged after the others).
        self._consequential: set[int] = set()
        #: Ranks whose judgement waits for earlier exception reports, in arrival order.
        self._raised_deadlines: dict[int, float] = {}
        self._queued_exits: dict[int, RankExited] = {}
        self._connected: set[int] = set()
        self._lost: set[int] = set()
        #: Refused control connections, reported as an aggregate: a flood of strangers must
        #: not turn into a flood of lines.
        self._refused = Tally(self.reporter.warn, "refused control connections")
        self._ending: _Ending | None = None
        self._kill_at: float | None = None
        self._killed = False
        #: How many ranks were still running when the job started ending.
        self._terminated: int | None = None
        self._deadline = time.monotonic() + plan.options.timeout if plan.options.timeout else None
        #: What the launcher's jobs share (dynamic processes), and the jobs spawned so far.
        self._universe = Universe()
        self._children = SpawnedJobs(self, b"")

    # -- the whole job ------------------------------------------------------------------------

    def run(self) -> int:
        from ompy.orte.control import ControlServer

        previous = self._catch_signals()
        for path in sweep_stale():
            self.reporter.note(f"removed {path}, left by a job whose launcher was killed")
        session = Session.create(self.jobid)
        server = None
        iof = self._iof
        try:
            secret = secrets.token_bytes(32)
            self._children = SpawnedJobs(self, secret)
            server = ControlServer(
                self.jobid,
                self.size,
                secret,
                self._on_control_event,
                host=self.plm.control_host(),
                auth_timeout=self.connect_timeout,
                exit_grace=self.exit_grace,
                universe=self._universe,
            )
            self._server = server
            server.start()
            self.reporter.note(
                f"job {self.jobid}: {self.size} ranks of {' '.join(self.plan.app.argv)}; "
                f"control server at {server.address[0]}:{server.address[1]}; "
                f"session directory {session.path}"
            )
            self._launch(server, secret, session)
            self._wait()
            self._settle(server)
        finally:
            self._kill_everything()
            iof.close(self._loop)
            if server is not None:
                server.close()
            self._refused.flush()
            removed = [*self._children.close(), *session.remove()]
            if removed:
                self.reporter.note(
                    f"removed leftover shared memory: {', '.join(map(str, removed))}"
                )
            self._restore_signals(previous)
            self._loop.close()
        return self._report()

    # -- launch -------------------------------------------------------------------------------

    def _launch(self, server: Any, secret: bytes, session: Session) -> None:
        from ompy.orte.control import environment_for_rank

        base = self.rank_environment()
        placements = self.plan.job_map.placements
        rank_nodes = [placement.node_id for placement in placements]
        node_names = {placement.node_id: placement.node.name for placement in placements}
        names = [node_names[node] for node in range(len(node_names))]
        self._handle_signals()
        if self._ending is not None:
            return  # interrupted before the first rank
        starts: list[tuple[int, Any, dict[str, str]]] = []
        for placement in self.plan.job_map.placements:
            env = dict(base)
            env.update(
                environment_for_rank(
                    jobid=self.jobid,
                    rank=placement.rank,
                    size=self.size,
                    local_rank=placement.local_rank,
                    local_size=placement.local_size,
                    node_id=placement.node_id,
                    node_name=placement.node.name,
                    server=server.address,
                    secret=secret,
                    oversubscribed=placement.oversubscribed,
                    session_dir=str(session.path),
                    rank_nodes=rank_nodes,
                    node_names=names,
                    universe_size=max(self.plan.allocation.total_slots, self.size),
                )
            )
            starts.append((placement.rank, placement, env))
        try:
            self.start_ranks(starts, self.plan.app.argv, self.plan.app.cwd)
        except LaunchError as error:
            self.launch_failed(error)
            return
        self.reporter.note(f"started {len(self._ranks)} ranks")

    def start_rank(
        self, rank: int, placement: Any, argv: Any, env: dict[str, str], cwd: Any
    ) -> None:
        """Start one process, known to the runner as ``rank`` (its universe rank: a spawned
        job's ranks follow the first job's); ``LaunchError`` if it cannot start."""
        self.start_ranks([(rank, placement, env)], argv, cwd)

    def start_ranks(
        self, starts: list[tuple[int, Any, dict[str, str]]], argv: Any, cwd: Any
    ) -> None:
        """Start ``(rank, placement, env)`` processes in order, all running ``argv`` in
        ``cwd``, through the plm's :meth:`~ompy.orte.mca.plm.PlmModule.spawn_all` (one
        message per node daemon, not one round trip per rank).  Stops starting when a signal
        ends the job meanwhile; ``LaunchError`` for the first that cannot start (those before
        it run)."""
        from ompy.orte.mca.plm import SpawnRequest

        ranks = [rank for rank, _placement, _env in starts]
        prepared: list[int] = []  # ranks whose stdio exists, in order

        def requests() -> Iterator[SpawnRequest]:
            # Made as the plm takes them: a plm that starts ranks one by one holds the
            # pipes of one rank not yet started at a time, not those of the whole job.
            for rank, placement, env in starts:
                stdio = self._iof.stdio_for(rank)
                prepared.append(rank)
                yield SpawnRequest(placement, argv, env, cwd, stdio)

        started = 0
        processes = self.plm.spawn_all(requests())
        try:
            for process in processes:
                self._register(ranks[started], process)
                started += 1
                if started < len(ranks):
                    self._handle_signals()
                    if self._ending is not None:
                        break  # interrupted while starting: do not start more
        finally:
            processes.close()
            for rank in prepared[started:]:
                self._iof.abandon(rank)

    def _register(self, rank: int, process: Any) -> None:
        self._iof.started(rank, self._loop)
        record = _Rank(rank, process.pid, process)
        self._ranks[rank] = record
        fd = process.exit_fd()
        if fd is not None:
            self._by_exit_fd[fd] = record
            self._loop.add_reader(fd, self._on_exit_fd)

    def launch_failed(self, error: LaunchError) -> None:
        self._end(_Ending(error.exit_code, str(error)))

    def rank_environment(self) -> dict[str, str]:
        """The environment every rank starts from (before its identity variables)."""
        return rank_base_environment(self.plan.app.env)

    # -- the wait loop ------------------------------------------------------------------------

    def _wait(self) -> None:
        drain_until: float | None = None
        while True:
            self._handle_signals()
            self._handle_events()
            self._poll_ranks()
            now = time.monotonic()
            if self._kill_at is not None and now >= self._kill_at:
                self._kill_running()
            self._judge_pending_exceptions(now)
            if self._deadline is not None and now >= self._deadline and self._ending is None:
                self._on_timeout()
                continue
            if not self._running():
                if drain_until is None:
                    drain_until = now + self.drain_timeout
                if self._iof.open_streams() == 0 or now >= drain_until:
                    return
            self._loop.run_once(self._next_wakeup(now, drain_until))

    def _next_wakeup(self, now: float, drain_until: float | None) -> float:
        moments = [m for m in (self._kill_at, self._deadline, drain_until) if m is not None]
        moments.extend(self._raised_deadlines.values())
        if self._ranks and any(r.process.exit_fd() is None for r in self._running()):
            moments.append(now + 0.05)  # no pidfd: poll for exits
        wait = min(moments) - now if moments else 1.0
        return max(0.0, min(wait, 1.0))

    def _running(self) -> list[_Rank]:
        return [r for r in self._ranks.values() if r.returncode is None]

    # -- rank exits ---------------------------------------------------------------------------

    def _on_exit_fd(self, fd: int) -> None:
        record = self._by_exit_fd.get(fd)
        if record is not None:
            self._check_exit(record)

    def _poll_ranks(self) -> None:
        for record in self._running():
            if record.process.exit_fd() is None:
                self._check_exit(record)

    def _check_exit(self, record: _Rank) -> None:
        returncode = record.process.poll()
        if returncode is None:
            return
        # What the rank told the control server before it exited (abort, finalize, an
        # exception) is queued already: take it into account before judging the exit.
        self._handle_events()
        record.returncode = returncode
        fd = record.process.exit_fd()
        if fd is not None:
            self._loop.remove_reader(fd)
            self._by_exit_fd.pop(fd, None)
        record.process.signal(signal.SIGKILL)  # whatever the rank left running in its group
        starter = record.process.starter_failure()
        record.process.release()
        self.reporter.note(f"rank {record.rank} (pid {record.pid}) exited: {returncode}")
        if starter is not None:  # e.g. the fork server died and took its ranks along
            if self._ending is None:
                self._end(_Ending(starter.exit_code, f"{starter.message}; the job ended."))
            return
        if record.rank in self._tracebacks and returncode != 0:
            # Judged by _judge_pending_exceptions, once ranks that finalized have exited.
            self._raised_deadlines.setdefault(record.rank, time.monotonic() + RAISED_GRACE)
            return
        from ompy.orte.mca.errmgr import RankExited

        exit_event = RankExited(
            record.rank,
            returncode,
            record.rank in self._finalized,
            connected=record.rank in self._connected,
        )
        self._raised_deadlines.pop(record.rank, None)
        if self._raised_deadlines and returncode != 0 and not self._is_cause(exit_event):
            # An exception reported earlier is the likelier cause: judge this exit after it.
            # (A rank that finalized and then failed is judged at once: the others' fences
            # failed because it left, so it is the cause.)
            self._queued_exits[record.rank] = exit_event
            self._raised_deadlines[record.rank] = time.monotonic()
        elif self._ending is None:
            self._judge(exit_event)

    def _is_cause(self, event: Any) -> bool:
        """Whether a non-zero exit cannot be the consequence of another rank's exception.

        Signal deaths, ranks that finalized, ranks that never connected and ranks whose
        connection dropped without an exception report failed on their own.
        """
        rank = event.rank
        return (
            event.returncode < 0
            or event.finalized
            or rank not in self._connected
            or rank in self._lost
        )

    def _judge_pending_exceptions(self, now: float) -> None:
        """Judge the ranks that reported an uncaught exception, when the picture is complete.

        An exception is often the consequence of another rank's failure (a fence that can
        never complete because a rank left).  So it is judged once its rank has exited and
        no rank that announced finalize is still on its way out (its exit code may be the
        cause), or after :data:`RAISED_GRACE` seconds whatever happens.  An exception that
        says it is a consequence waits out its grace whatever happens, after the others: the
        rank that failed first reports within it.
        """
        from ompy.orte.mca.errmgr import RankRaised

        for rank, queued in list(self._queued_exits.items()):
            if self._is_cause(queued):  # its connection loss arrived since: it failed first
                del self._queued_exits[rank]
                self._raised_deadlines.pop(rank, None)
                if self._ending is None:
                    self._judge(queued)
        leaving = any(r.rank in self._finalized for r in self._running())
        # In the order the reports arrived: the first exception is usually the cause of the
        # others (their fences failed because its rank left), so it is judged first.
        consequential = self._consequential
        pending = sorted(self._raised_deadlines.items(), key=lambda item: item[0] in consequential)
        for rank, deadline in pending:
            exited = self._ranks[rank].returncode is not None
            if not (now >= deadline or (exited and not leaving and rank not in consequential)):
                return
            del self._raised_deadlines[rank]
            exit_event = self._queued_exits.pop(rank, None)
            if self._ending is None:
                self._judge(exit_event or RankRaised(rank, self._tracebacks[rank]))

    # -- control events -----------------------------------------------------------------------

    def _on_control_event(self, event: Any) -> None:
        """Called from the control server's thread: queue and wake the loop."""
        self._events.append(event)
        self._loop.wake()

    def _handle_events(self) -> None:
        # The control plane's events, told apart from errmgr's by their module's name.
        from ompy.orte.control import events
        from ompy.orte.mca import errmgr

        while self._events:
            event = self._events.popleft()
            if isinstance(event, events.RankLost):
                self._lost.add(event.rank)
            elif isinstance(event, events.RankConnected):
                self._connected.add(event.rank)
                self.reporter.note(f"rank {event.rank} connected (pid {event.pid})")
            elif isinstance(event, events.RankFinalized):
                self._finalized.add(event.rank)
            elif isinstance(event, events.RankException):
                self._tracebacks[event.rank] = event.traceback
                if event.consequential:
                    self._consequential.add(event.rank)
                record = self._ranks.get(event.rank)
                if record is not None and record.returncode is None:
                    self._raised_deadlines[event.rank] = time.monotonic() + RAISED_GRACE
            elif isinstance(event, events.RankAborted):
                if self._ending is None:
                    self._judge(errmgr.RankAborted(event.rank, event.code, event.message))
            elif isinstance(event, events.RankLeaving):
                if self._ending is None:
                    self._judge(
                        errmgr.RankLeft(event.rank, event.code, event.how, event.unfinished)
                    )
            elif isinstance(event, events.BadClient):
                self._refused.note(_DIGITS.sub("N", event.reason))
            elif isinstance(event, events.SpawnRequested):
                self._children.start(event, self._universe)
            else:
                self.reporter.note(f"control event: {event}")

    def _judge(self, event: RankEvent) -> None:
        failure = self.errmgr.judge(event)
        if failure is None:
            return
        record = self._ranks.get(failure.rank)
        where = f"pid {record.pid}, " if record is not None else ""
        spawned = self._children.describe(failure.rank)
        if spawned is None:
            who = f"rank {failure.rank} of {self.size}"
            node = self.plan.job_map.placements[failure.rank].node.name
            tag = f"[rank {failure.rank}] "
        else:
            who, node, tag = spawned
        self._end(
            _Ending(
                failure.exit_code,
                "",
                detail=failure.detail,
                detail_tag=tag,
                rank=failure.rank,
                reason=f"{who} ({where}on {node}) {failure.reason}",
            )
        )

    # -- ending the job -----------------------------------------------------------------------

    def _end(self, ending: _Ending, *, terminate: bool = True) -> None:
        """Record why the job ends (the first reason wins) and start terminating the ranks."""
        if self._ending is None:
            self._ending = ending
            self._terminated = sum(1 for r in self._running() if r.rank != ending.rank)
        if terminate:
            self._terminate(signal.SIGTERM)

    def _terminate(self, signum: int) -> None:
        running = self._running()
        if running:
            self.reporter.note(
                f"sending {signal.Signals(signum).name} to {len(running)} running ranks"
            )
        for record in running:
            record.process.signal(signum)
        if self._kill_at is None:
            self._kill_at = time.monotonic() + self.abort_timeout

    def _kill_running(self) -> None:
        running = self._running()
        if running:
            self.reporter.note(
                f"{len(running)} ranks still running after {self.abort_timeout:g} s: SIGKILL"
            )
            self._killed = True
        for record in running:
            record.process.signal(signal.SIGKILL)
        self._kill_at = None

    def _kill_everything(self) -> None:
        """Last resort (also on errors in the launcher itself): kill and reap every rank."""
        for record in self._ranks.values():
            record.process.signal(signal.SIGKILL)
        for record in self._running():
            for _ in range(100):  # SIGKILL cannot be ignored; reaping takes milliseconds
                returncode = record.process.poll()
                if returncode is not None:
                    record.returncode = returncode
                    break
                time.sleep(0.01)
            record.process.release()

    def _on_timeout(self) -> None:
        running = {r.rank: r.pid for r in self._running()}
        stacks = self._server.request_stacks(self.stack_timeout) if running else {}
        timeout = self.plan.options.timeout
        self.reporter.stacks(
            f"the job did not finish within --timeout {timeout:g} s; "
            f"stacks of the {len(running)} ranks still running:",
            running,
            stacks,
        )
        self._end(
            _Ending(
                EXIT_TIMEOUT,
                f"the job did not finish within --timeout {timeout:g} s; its "
                f"{len(running)} remaining ranks were terminated.",
            )
        )

    def _settle(self, server: Any) -> None:
        """Give the control server a moment to deliver what ranks sent just before they died.

        A rank reports its traceback and then exits; the exit may be seen first.  Once every
        rank's connection is closed, the server has read everything they sent.
        """
        until = time.monotonic() + 1.0
        while (server.connected_ranks() or self._children.connected()) and time.monotonic() < until:
            time.sleep(0.01)
        self._handle_events()

    # -- signals ------------------------------------------------------------------------------

    def _catch_signals(self) -> dict[int, Any]:
        previous = {}
        if threading.current_thread() is not threading.main_thread():
            return previous  # embedded use from another thread: leave signals alone
        for name in _HANDLED_SIGNALS:
            signum = getattr(signal, name)
            previous[signum] = signal.signal(signum, self._record_signal)
        self._loop.catch_signals()
        return previous

    def _record_signal(self, signum: int, _frame: Any) -> None:
        self._signals.append(signum)

    def _restore_signals(self, previous: dict[int, Any]) -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def _handle_signals(self) -> None:
        while self._signals:
            signum = self._signals.pop(0)
            name = signal.Signals(signum).name
            if signum == signal.SIGUSR1:
                running = {r.rank: r.pid for r in self._running()}
                stacks = self._server.request_stacks(self.stack_timeout) if running else {}
                self.reporter.stacks(
                    f"SIGUSR1: stacks of {len(running)} running ranks:", running, stacks
                )
            elif signum == signal.SIGINT:
                if self._ending is not None and self._ending.exit_code == EXIT_INTERRUPTED:
                    self._kill_running()  # second Ctrl-C: do not wait any longer
                    continue
                self._end(
                    _Ending(
                        EXIT_INTERRUPTED,
                        f"interrupted ({name}); the job's {len(self._running())} running "
                        f"ranks were terminated.",
                    )
                )
            else:
                self._end(
                    _Ending(
                        128 + signum,
                        f"received {name} and forwarded it to the job's "
                        f"{len(self._running())} running ranks.",
                    ),
                    terminate=False,
                )
                self._terminate(signum)

    # -- the report ---------------------------------------------------------------------------

    def _report(self) -> int:
        ending = self._ending
        if ending is None:
            self.reporter.note(f"job {self.jobid} finished: all {self.size} ranks exited with 0")
            return 0
        if ending.rank is not None:
            detail = ending.detail or self._tracebacks.get(ending.rank, "")
            others = self._terminated or 0
            if others == 0:
                ended = "no other rank was still running"
            elif others == 1:
                ended = "the 1 other rank still running was terminated"
            else:
                ended = f"the {others} other ranks still running were terminated"
            message = f"{ending.reason}; {ended}. ompy run exits with code {ending.exit_code}."
            if detail:
                message += " Its report:"
            self.reporter.error(message, detail, ending.detail_tag)
        else:
            self.reporter.error(f"{ending.message} ompy run exits with code {ending.exit_code}.")
        return ending.exit_code
