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
