"""``Comm.Idup`` and ``Comm.Idup_with_info``: duplicating a communicator without blocking.

The call returns at once with the new communicator's handle and a request.  The context-id
agreement of :mod:`.cid` runs as a nonblocking collective on the parent: a schedule
(:mod:`ompy.ompi.mca.coll.base.schedule`) whose rounds are the small allgathers the agreement
needs (a gather to rank 0 and the answer back, on the collective tag the call draws), advanced
by the progress engine whenever the process is inside any MPI call.  MPI requires the members
to call collectives on the parent in the same order, so the call's place in that order (the
parent's collective sequence number) is the same on every member; it orders this agreement
against others running in the process (:mod:`.cid`'s priorities) and keeps several ``Idup``
calls in flight on one parent apart.

Once the id is agreed, the communicator is built as ``Dup`` builds it (registered with the
PML, the coll framework's selection, the parent's error handler, attributes through their copy
callbacks, the hints of ``info`` or else the parent's) and the request completes; the handle
refers to it from then on (before, it is ``COMM_NULL``-like: using it is erroneous, as in MPI).
The building runs from a progress callback of its own, outside the schedule runner, because a
coll component may set up its module collectively (coll/sm agrees on a shared segment), which
waits on the new communicator's other members.  As in Open MPI, that setup then happens inside
the progress engine; two ``Idup`` calls on different parents that complete in opposite orders on
two processes would make such collective set-ups wait for each other, so programs should
complete them in one order (or use ``Dup``) when a component with collective set-up runs.
"""

from __future__ import annotations

import pickle
from collections.abc import Generator
from typing import Any, Self

from ..completion import CoreRequest
from ..errors import ERR_INTERN, ERR_OTHER
from ..errors import Exception as MPIException
from ..mca.coll.base.schedule import Schedule, start_schedule
from ..mca.pml.interface import SizedRecvRequest
from .attributes import copy_attributes
from .cid import agreement
from .communicator import Communicator
from .info import Info, info_items
from .pickled import byte_spec
from .request import Request
from .transfers import STANDARD


def _allgather_rounds(comm: Communicator, tag: int, value: Any) -> Generator[Any, None, list]:
    """Every member's ``value`` in rank order, as rounds of a schedule: a gather to rank 0,
    then rank 0's answer to everyone."""
    if comm.size == 1:
        return [value]
    pml = comm.pml
    if comm.rank != 0:
        data = memoryview(pickle.dumps(value))
        send = pml.isend(byte_spec(data), 0, tag, comm, STANDARD)
        answer = pml.irecv_view(None, 0, tag, comm)
        yield (send, answer)
        return _unpickled(answer)
    parts = [pml.irecv_view(None, peer, tag, comm) for peer in range(1, comm.size)]
    yield parts
    values = [value] + [_unpickled(part) for part in parts]
    data = memoryview(pickle.dumps(values))
    yield [pml.isend(byte_spec(data), peer, tag, comm, STANDARD) for peer in range(1, comm.size)]
    return values


def _unpickled(received: SizedRecvRequest) -> Any:
    """The value a completed sized receive of the allgather carries."""
    if received.view is None:
        raise MPIException(ERR_INTERN, "the PML completed a sized receive without its data")
    return pickle.loads(received.view)


class IdupCore(CoreRequest):
    """The request of an ``Idup``: complete once the new communicator is built."""

    __slots__ = ("cid", "handle", "hints", "parent", "schedule")

    def __init__(self, parent: Communicator, handle: Any, hints: dict[str, str]) -> None:
        super().__init__()
        self.parent = parent
        self.handle = handle
        self.hints = hints
        self.cid = -1
        self.schedule: Schedule | None = None

    def agree(self, comm: Communicator, tag: int, priority: tuple[Any, ...]) -> Generator:
        """The schedule's algorithm: the agreement, each of its allgathers a few rounds."""
        steps = agreement(comm.instance, priority=priority)
        try:
            value = next(steps)
            while True:
                gathered = yield from _allgather_rounds(comm, tag, value)
                value = steps.send(gathered)
        except StopIteration as done:
            self.cid = done.value
        finally:
            steps.close()

    def agreed(self, schedule: CoreRequest) -> None:
        """The schedule ended (in the runner): build the communicator from a callback of its
        own, or fail with the schedule's error."""
        if schedule.exception is not None:
            self.fail(schedule.error or ERR_OTHER, schedule.exception)
            return
        self.parent.engine.register(self.build)

    def build(self) -> int:
        """Progress callback, once: the communicator, as ``Dup`` builds it."""
        parent = self.parent
        parent.engine.unregister(self.build)
        try:
            name = f"MPI COMMUNICATOR {self.cid} IDUP FROM {parent.context_id}"
            new = Communicator.create(
                parent.instance, self.cid, parent.world_ranks, name, topo=parent.topo
            )
            new.session = parent.session
            new.errhandler = parent.errhandler
            new.hints = self.hints
            copy_attributes(parent, new, "Comm.Idup")
        except MPIException as error:
            self.fail(error.Get_error_class(), error)
            return 1
        except Exception as error:
            self.fail(ERR_OTHER, MPIException(ERR_OTHER, f"Comm.Idup: {error}"))
            return 1
        self.handle._c = new
        self.finish()
        return 1


class CommIdup:
    """The nonblocking duplication half of :class:`~.comm.Comm`."""

    __slots__ = ()

    _c: Communicator | None  # provided by Comm

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    @classmethod
    def _of(cls, communicator: Communicator | None) -> Self:  # provided by Comm
        raise NotImplementedError

    def _idup(self, call: str, hints: dict[str, str]) -> tuple[Self, Request]:
        c = self._live(call)
        handle = type(self)._of(None)
        core = IdupCore(c, handle, hints)
        # The call's place among the parent's collectives: the same on every member.
        # Under the MPI lock (reentrant): with THREAD_MULTIPLE another thread's progress must
        # not finish the schedule between its start and the hand-over being attached.
        with c.engine.lock:
            priority = (0, c.context_id, 1, c.coll.sequence)
            schedule = start_schedule(c, core.agree, priority)
            core.schedule = schedule
            if schedule.complete:
                core.agreed(schedule)
            else:
                schedule.on_complete = core.agreed
        return handle, Request._of(core, c)

    def Idup(self, info: Info | None = None) -> tuple[Self, Request]:
        """Nonblocking duplicate a communicator; the hints of ``info`` (else the parent's)."""
        c = self._live("Comm.Idup")
        hints = dict(c.hints) if info is None else info_items(info, "Comm.Idup")
        return self._idup("Comm.Idup", hints)

    def Idup_with_info(self, info: Info) -> tuple[Self, Request]:
        """Nonblocking duplicate a communicator with hints."""
        self._live("Comm.Idup_with_info")
        return self._idup("Comm.Idup_with_info", info_items(info, "Comm.Idup_with_info"))
