"""The default policy: the first rank that fails ends the job, with that rank's code.

* An uncaught Python exception, reported by the rank before it exits: code 1 (what Python
  itself exits with), and the traceback goes into the report.
* abort(errorcode): the abort's error code, and its message goes into the report.  A code
  that is no exit status (outside 0..255) gives 1, as the aborting rank itself exits with:
  the shell would read 256 as 0, success.
* A non-zero exit: that code.  Death by a signal: 128 + the signal number.
* Exiting with code 0 is a normal end, whether or not the rank ran ompy code.
"""

from __future__ import annotations

from ompy.orte.mca.errmgr import (
    ErrmgrModule,
    Failure,
    RankAborted,
    RankEvent,
    RankExited,
    RankRaised,
)
from ompy.orte.mca.errmgr.base import describe_status, exit_code_of


class DefaultErrmgrModule(ErrmgrModule):
    """The errmgr module of the ``default`` component."""

    def judge(self, event: RankEvent) -> Failure | None:
        if isinstance(event, RankRaised):
            return Failure(event.rank, 1, "raised an uncaught exception", event.traceback)
        if isinstance(event, RankAborted):
            message = f": {event.message}" if event.message else ""
            return Failure(
                event.rank,
                event.errorcode if 0 <= event.errorcode <= 255 else 1,
                f"called abort with error code {event.errorcode}{message}",
            )
        if isinstance(event, RankExited) and event.returncode != 0:
            status = describe_status(event.returncode)
            if event.finalized:
                status += " after finalizing"
            return Failure(event.rank, exit_code_of(event.returncode), status)
        if isinstance(event, RankExited):
            return None
        raise TypeError(
            f"errmgr 'default' cannot judge {event!r}: not a RankExited, RankAborted or RankRaised"
        )
