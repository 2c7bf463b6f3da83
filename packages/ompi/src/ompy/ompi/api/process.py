"""The MPI state of one process: its PML, progress engine, world and context ids.

Everything a communicator needs to move data hangs off one :class:`MpiProcess`, which the
communicators reference directly (``comm.pml``, ``comm.engine``): the hot path then reads two
attributes instead of looking up globals.  :mod:`.init` creates the process's instance;
:mod:`.testing` creates several in one interpreter to test the API against a loopback PML.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ompy.opal.progress import ProgressEngine

from ..errors import ERR_INTERN
from ..errors import Exception as MPIException
from .bsend import BsendPool


@attrs.define(eq=False)
class MpiProcess:
    """One MPI process: the modules it selected and the state shared by its communicators."""

    pml: Any
    engine: ProgressEngine
    world_rank: int
    world_size: int
    #: The Proc of every world rank (node ids decide Split_type(COMM_TYPE_SHARED)).
    procs: tuple[Any, ...]
    #: End the job (``Comm.Abort``); the run-time's abort in a real process.
    abort: Callable[[int, str], Any]
    processor_name: str = "localhost"
    #: Context ids of the live communicators of this process.
    cids: set[int] = attrs.field(factory=set)
    bsend: BsendPool = attrs.field(factory=BsendPool)
    #: Receives of pickled objects still in progress, in posting order (see :mod:`.pickled`).
    pickled_recvs: list[Any] = attrs.field(factory=list)
    _progress_registered: bool = False
    _advancing: bool = False

    def track_pickled(self, receive: Any) -> None:
        """Advance ``receive`` from the progress engine until it completes.

        A pickled receive matches its message with a matched probe, which must keep happening
        while the program waits for something else (a synchronous send to a peer that is
        itself waiting for this receive), and in posting order, as a posted receive would.
        """
        self.pickled_recvs.append(receive)
        if not self._progress_registered:
            self._progress_registered = True
            self.engine.register(self.advance_pickled)

    def advance_pickled(self) -> int:
        """One step for every pickled receive in progress, oldest first; how many finished."""
        pending = self.pickled_recvs
        if not pending or self._advancing:
            return 0
        self._advancing = True  # a step may progress the PML, which calls back here
        try:
            finished = 0
            for receive in list(pending):
                receive.step()
                if receive.done:
                    pending.remove(receive)
                    finished += 1
            return finished
        finally:
            self._advancing = False

    def close(self) -> None:
        """Stop advancing pickled receives (at finalize)."""
        if self._progress_registered:
            self._progress_registered = False
            self.engine.unregister(self.advance_pickled)

    @property
    def max_tag(self) -> int:
        return self.pml.max_tag

    def lowest_free_cid(self, start: int) -> int:
        """The lowest context id >= ``start`` that no live communicator of this process uses."""
        cid = start
        cids = self.cids
        while cid in cids:
            cid += 1
        if cid > self.pml.max_contextid:
            raise MPIException(
                ERR_INTERN,
                f"out of communicator context ids: the PML carries ids up to "
                f"{self.pml.max_contextid}; free communicators that are no longer used",
            )
        return cid
