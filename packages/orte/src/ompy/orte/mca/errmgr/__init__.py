"""The errmgr framework (error manager): what a rank's failure means for the job.

The launcher reports what happens to each rank (:class:`RankExited`, :class:`RankAborted`,
:class:`RankRaised`, :class:`RankLeft`) to the errmgr module, which answers with a
:class:`Failure` when the job must end (the launcher then terminates every other rank and
exits with ``Failure.exit_code``), or ``None`` when the job goes on.  One-of-many: ``default``
implements Open MPI's policy.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import attrs

from ompy.opal.mca import Cardinality, Component, Framework, Offer

INTERFACE_VERSION = (1, 0)


@attrs.frozen
class RankExited:
    """A rank's process ended; ``returncode`` is negative when a signal killed it."""

    rank: int
    returncode: int
    #: The rank told the launcher it finalized (only ranks running ompy code can).
    finalized: bool = False
    #: The rank connected to the launcher (it started ompy's run-time, e.g. ``MPI.Init``):
    #: such a rank must finalize before it exits, whatever its exit status.
    connected: bool = False
    #: What the rank said about leaving without finalizing, if it said anything.
    note: str = ""


@attrs.frozen
class RankAborted:
    """A rank called abort: the whole job must end with ``errorcode``."""

    rank: int
    errorcode: int
    message: str = ""


@attrs.frozen
class RankRaised:
    """A rank reported an uncaught Python exception (it is about to exit)."""

    rank: int
    traceback: str


@attrs.frozen
class RankLeft:
    """A rank is exiting without finalizing while other ranks have not finished.

    Sent by the rank itself, before it exits: ``sys.exit(code)`` before every rank reached
    ``Finalize`` (``code`` is the exit status it asked for), or an exit whose finalization
    failed (``code`` is ``None``).  ``how`` completes "rank N ...", e.g. "called sys.exit(3)".
    """

    rank: int
    code: int | None
    how: str
    #: The ranks that had not reached Finalize when it left.
    unfinished: tuple[int, ...] = ()


RankEvent = RankExited | RankAborted | RankRaised | RankLeft


@attrs.frozen
class Failure:
    """The job failed because of ``rank``: why, in words, and the code ``ompy run`` returns."""

    rank: int
    exit_code: int
    #: Completes "rank N ..." in the report, e.g. "exited with code 3".
    reason: str
    #: A traceback or message the rank reported, printed under the report.
    detail: str = ""


class ErrmgrModule(abc.ABC):
    """Decides, event by event, whether the job has failed; :meth:`judge` is its contract."""

    @abc.abstractmethod
    def judge(self, event: RankEvent) -> Failure | None:
        """A :class:`Failure` when ``event`` ends the job, else ``None``."""


class ErrmgrComponent(Component[None, ErrmgrModule]):
    """Base class of errmgr components (entry-point group ``ompy.mca.errmgr``).

    ``query`` is asked once per job, with ``None`` as its context.
    """

    framework: ClassVar[str] = "errmgr"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: None) -> Offer[ErrmgrModule] | None:
        """Offer an error policy for the job, or ``None`` to stay out."""
        return None


framework = Framework.of(
    ErrmgrComponent,
    "orte",
    Cardinality.ONE,
    "error management: deciding what a rank's failure means for the job",
)
