"""The default policy: the first rank that fails ends the job, with that rank's code.

* An uncaught Python exception, reported by the rank before it exits: code 1 (what Python
  itself exits with), and the traceback goes into the report.
* abort(errorcode): the abort's error code, and its message goes into the report.  A code
  that is no exit status (outside 0..255) gives 1, as the aborting rank itself exits with:
  the shell would read 256 as 0, success.
* A non-zero exit: that code.  Death by a signal: 128 + the signal number.
* Leaving early (``sys.exit(code)`` before every rank reached ``Finalize``): that code, 0
  included, since the job did not end as a whole; a rank whose finalization failed: 1.
* Exiting with code 0 is a normal end for a rank that finalized, and for a program that never
  connected to the job (not an ompy program).  A rank that connected and exits with 0 without
  finalizing (``os._exit(0)``, a failed ``atexit``) broke the rule that every rank that
  initialized must finalize: Open MPI aborts such a job, and so does this policy, with code 1
  (as Open MPI does, so that the shell sees a failure).
"""

from __future__ import annotations

from ompy.orte.mca.errmgr import (
    ErrmgrModule,
    Failure,
    RankAborted,
    RankEvent,
    RankExited,
    RankLeft,
    RankRaised,
)
from ompy.orte.mca.errmgr.base import describe_status, exit_code_of

#: The exit code of a job whose rank exited with 0 without finalizing (Open MPI's default).
UNFINALIZED_EXIT_CODE = 1


def _ranks(ranks: tuple[int, ...]) -> str:
    listed = ", ".join(map(str, ranks))
    return f"rank {listed} had" if len(ranks) == 1 else f"ranks {listed} had"


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
        if isinstance(event, RankLeft):
            return self._left(event)
        if isinstance(event, RankExited) and event.returncode != 0:
            status = describe_status(event.returncode)
            if event.finalized:
                status += " after finalizing"
            elif event.note:
                status += f" without finalizing ({event.note})"
            return Failure(event.rank, exit_code_of(event.returncode), status)
        if isinstance(event, RankExited):
            if event.finalized or not event.connected:
                return None
            why = f" ({event.note})" if event.note else ""
            return Failure(
                event.rank,
                UNFINALIZED_EXIT_CODE,
                f"exited with code 0 without finalizing{why}: every rank that initialized must "
                f"finalize before it exits (a rank ending with os._exit, or whose atexit "
                f"handlers failed, does not)",
            )
        raise TypeError(
            f"errmgr 'default' cannot judge {event!r}: not a RankExited, RankAborted, RankRaised "
            f"or RankLeft"
        )

    @staticmethod
    def _left(event: RankLeft) -> Failure:
        unfinished = f" while {_ranks(event.unfinished)} not finished" if event.unfinished else ""
        if event.code is None:
            return Failure(event.rank, UNFINALIZED_EXIT_CODE, f"{event.how}{unfinished}")
        return Failure(
            event.rank,
            event.code if 0 <= event.code <= 255 else 1,
            f"{event.how}{unfinished}, without finalizing: the job ends with its exit code",
        )
