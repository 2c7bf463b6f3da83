"""What the control server tells the launcher about the job's ranks.

The server calls the launcher's ``on_event`` callback with one of these, from the server's own
thread: the callback must be quick and thread-safe (typically it puts the event on a queue).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class RankConnected:
    """A rank proved it knows the job secret and said hello."""

    rank: int
    pid: int | None = None
    host: str | None = None


@attrs.frozen
class RankFinalized:
    """A rank announced that it finished cleanly."""

    rank: int


@attrs.frozen
class RankAborted:
    """A rank called abort: the launcher should end the job with ``code``."""

    rank: int
    code: int
    message: str


@attrs.frozen
class RankException:
    """A rank reported an uncaught Python exception (the traceback as text).

    ``consequential``: the exception says it was raised because another rank failed first
    (:class:`ompy.orte.consequence.Consequential`).
    """

    rank: int
    traceback: str
    consequential: bool = False


@attrs.frozen
class RankLeaving:
    """A rank is exiting without finalizing while the job has not ended as a whole.

    ``code`` is the exit status it asked for (``sys.exit(code)``), or ``None`` when its
    finalization failed; ``how`` says what it did ("called sys.exit(3)"); ``unfinished`` are
    the ranks that had not reached Finalize.  The rank exits right after.
    """

    rank: int
    code: int | None
    how: str
    unfinished: tuple[int, ...] = ()


@attrs.frozen
class RankLost:
    """A rank's control connection closed before it finalized."""

    rank: int
    reason: str = ""


@attrs.frozen
class BadClient:
    """A connection was refused: wrong secret, silence, bad frames, or an impossible claim."""

    peer: str
    reason: str


@attrs.frozen(eq=False)
class SpawnRequested:
    """A rank asked for a new job (``Comm.Spawn``): the launcher starts it and calls
    ``answer(value, error)`` (from any thread) with None or the :class:`SpawnError`."""

    rank: int
    #: One map per application: ``argv``, ``maxprocs``, ``env``, ``wdir``, ``host``.
    apps: list[dict[str, Any]]
    #: The port the children connect to in their MPI initialization.
    port: str
    answer: Callable[[Any, Exception | None], None]


Event = (
    RankConnected
    | RankFinalized
    | RankAborted
    | RankException
    | RankLeaving
    | RankLost
    | BadClient
    | SpawnRequested
)
