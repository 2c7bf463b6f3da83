"""The plm framework (process launch management): starting the ranks of a job and signalling them.

The launcher hands the plm module each rank's placement, argv, environment, working directory
and stdio; the module starts the process and returns a :class:`RankProcess` handle through which
the launcher learns that it exited and delivers signals to it and everything it started.
One-of-many: ``local`` forks ranks on this host; ``ssh`` (and ``slurm``) start an ``ompy daemon``
per node (:mod:`ompy.orte.daemon`), which forks that node's ranks.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import ClassVar

import attrs

from ompy.opal.mca import Cardinality, Component, Framework, Offer
from ompy.orte.launcher.job import Node, Placement

INTERFACE_VERSION = (1, 0)


#: Stdio of a rank as ``subprocess.Popen`` understands it: an fd, ``DEVNULL`` or ``None``.
StdioTarget = int | None


@attrs.frozen
class Stdio:
    """The three standard streams a rank starts with (``None`` inherits the launcher's)."""

    stdin: StdioTarget
    stdout: StdioTarget
    stderr: StdioTarget


@attrs.frozen
class StarterFailure:
    """A rank ended because the helper process that started it died (the fork server).

    The rank's own exit status says nothing then (the kernel killed it with its starter), so
    the launcher reports ``message`` and ends the job with ``exit_code``.
    """

    #: A sentence naming the helper and how it ended, e.g. "the fork server (pid 12) died:
    #: it was killed by signal 9 (SIGKILL)".
    message: str
    exit_code: int


@attrs.frozen
class SpawnRequest:
    """One rank to start, with what :meth:`PlmModule.spawn` is given for it."""

    placement: Placement
    argv: Sequence[str]
    #: The rank's whole environment (its identity variables included).
    env: Mapping[str, str]
    cwd: Path
    stdio: Stdio


class RankProcess(abc.ABC):
    """A started rank, as the launcher sees it; every method but :meth:`starter_failure`
    is required."""

    #: The rank in its job.
    rank: int
    #: The process id of the rank, which leads its own process group.
    pid: int

    @abc.abstractmethod
    def exit_fd(self) -> int | None:
        """A file descriptor that becomes readable when the rank exits (or ``None``: poll)."""

    @abc.abstractmethod
    def poll(self) -> int | None:
        """The exit status once the rank has exited (negative: killed by that signal)."""

    @abc.abstractmethod
    def signal(self, signum: int) -> None:
        """Send ``signum`` to the rank and every process it started; a gone rank is ignored."""

    @abc.abstractmethod
    def release(self) -> None:
        """Free the handle's resources once the rank is reaped."""

    def starter_failure(self) -> StarterFailure | None:
        """Once the rank has exited: the death of its starter, if that is what ended it.

        The default: ``None``, the rank's exit status is the whole story.
        """
        return None


class PlmModule(abc.ABC):
    """Starts ranks on the nodes it can reach.

    Required: :meth:`check_nodes` and :meth:`spawn`.  Optional, doing nothing by default:
    :meth:`prepare` and :meth:`finish`, which the launcher always calls (``prepare`` before the
    first ``spawn``, ``finish`` once the job is over, also when it failed to start).  The
    launcher starts a job's ranks through :meth:`spawn_all`, which by default calls
    :meth:`spawn` for each.
    """

    @abc.abstractmethod
    def check_nodes(self, nodes: Sequence[Node]) -> None:
        """Raise :class:`~ompy.orte.launcher.errors.LaunchError` naming nodes it cannot reach."""

    def prepare(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        """Called once before the first :meth:`spawn`, with what every rank has in common.

        ``env`` is the ranks' environment without their identity variables.  A module may
        start helpers here (plm ``local`` starts its fork server), so that their start-up
        overlaps the launcher's remaining set-up.  The default does nothing.
        """
        return None

    def finish(self) -> None:
        """Called once after every rank was reaped: stop what :meth:`prepare` started."""
        return None

    def forward_environment(self, exported: Mapping[str, str]) -> None:
        """Called once before :meth:`prepare` with the variables the user asked to pass on.

        ``exported`` holds ``-x`` and ``--mca`` variables.  A launcher that starts ranks on
        other hosts sends these (and the ``OMPY_`` variables) rather than the launcher's whole
        environment, which belongs to this host.  The default ignores them (ranks on this
        host get the whole environment through :meth:`spawn`).
        """
        return None

    def control_host(self) -> str:
        """The address the job's control server listens on: loopback unless ranks on other
        hosts must reach it (then ``0.0.0.0``).  The default: ``127.0.0.1``."""
        return "127.0.0.1"

    @abc.abstractmethod
    def spawn(
        self,
        placement: Placement,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        stdio: Stdio,
    ) -> RankProcess:
        """Start one rank; raises ``LaunchError`` when the program cannot be started."""

    def spawn_all(self, requests: Iterable[SpawnRequest]) -> Iterator[RankProcess]:
        """Start the ranks of ``requests``, yielding their handles in the same order.

        ``requests`` is consumed as the module goes (each rank's stdio is made when its
        request is taken), so a module that starts ranks one by one takes one at a time.

        The launcher consumes the ranks one by one and may stop between two (a signal while
        starting): a module must not leave a rank running that it has not yielded once the
        generator is closed.  A rank that cannot start raises ``LaunchError`` at its turn;
        those yielded before it run, none after it is yielded.

        The default starts each rank with :meth:`spawn` when the launcher asks for it.  A
        module whose ranks are started by helpers (node daemons) overrides it to hand every
        helper all of its ranks at once, so that a launch costs one round trip per helper,
        not one per rank.
        """
        for request in requests:
            yield self.spawn(
                request.placement, request.argv, request.env, request.cwd, request.stdio
            )


class PlmComponent(Component[Sequence[Node], PlmModule]):
    """Base class of plm components (entry-point group ``ompy.mca.plm``).

    ``query`` is asked about the nodes of the job's allocation.
    """

    framework: ClassVar[str] = "plm"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: Sequence[Node]) -> Offer[PlmModule] | None:
        """Offer a launcher for the job on these nodes, or ``None`` to stay out."""
        return None


framework = Framework.of(
    PlmComponent,
    "orte",
    Cardinality.ONE,
    "process launch: starting, signalling and reaping the ranks of a job",
)
