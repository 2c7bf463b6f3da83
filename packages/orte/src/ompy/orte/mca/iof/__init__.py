"""The iof framework (I/O forwarding): the ranks' stdin, stdout and stderr.

For each rank the launcher asks the iof module which stdio it starts with
(:meth:`IofModule.stdio_for`), tells it once the rank is started (:meth:`IofModule.started`),
and keeps running its event loop, in which the module registered the streams it reads.  The
module decides the presentation: tagging, time stamps, per-rank files.  One-of-many.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import ClassVar

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.opal.mca import Cardinality, Component, Framework, Offer
from ompy.orte.mca.plm import Stdio

INTERFACE_VERSION = (1, 0)


@attrs.frozen
class IofOptions:
    """How the user wants the ranks' output presented (``ompy run`` options)."""

    jobid: str
    size: int
    tag_output: bool = False
    timestamp_output: bool = False
    #: ``--output-filename``: write each rank's streams to files under this directory instead.
    output_dir: Path | None = None
    #: Where forwarded output goes (the launcher's own stdout and stderr file descriptors).
    stdout_fd: int = 1
    stderr_fd: int = 2


class IofModule(abc.ABC):
    """Forwards the stdio of one job's ranks; every method is required."""

    @abc.abstractmethod
    def stdio_for(self, rank: int) -> Stdio:
        """The streams rank ``rank`` starts with (creating pipes as needed)."""

    @abc.abstractmethod
    def started(self, rank: int, loop: EventLoop) -> None:
        """The rank runs: close the child's ends and start reading ours in ``loop``."""

    @abc.abstractmethod
    def abandon(self, rank: int) -> None:
        """The rank could not be started: release what :meth:`stdio_for` created."""

    @abc.abstractmethod
    def open_streams(self) -> int:
        """How many streams have not reached end-of-file yet."""

    @abc.abstractmethod
    def close(self, loop: EventLoop) -> None:
        """Flush what is buffered (partial last lines included) and close every stream."""


class IofComponent(Component[IofOptions, IofModule]):
    """Base class of iof components (entry-point group ``ompy.mca.iof``).

    ``query`` is asked with the user's presentation options for the job.
    """

    framework: ClassVar[str] = "iof"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: IofOptions) -> Offer[IofModule] | None:
        """Offer a forwarder presenting output as ``context`` asks, or ``None`` to stay out."""
        return None


framework = Framework.of(
    IofComponent,
    "orte",
    Cardinality.ONE,
    "I/O forwarding: the ranks' standard input, output and error",
)
