"""Agreeing on the context id of a new communicator (Open MPI's ``ompi_comm_nextcid``).

Every member of the parent proposes the lowest id it has free; the largest proposal is the
candidate; if it is free on every member it is taken, otherwise the members try again above it.
The parent's members all take part, including those that end up outside the new communicator,
so the id is the same everywhere it is used.  An id stays reserved until its communicator is
freed; ids are never reused while a communicator lives.

Ids 0 and 1 belong to ``COMM_WORLD`` and ``COMM_SELF`` whether or not the world model is
initialized yet: a session can build communicators before ``MPI.Init``, and those must not take
the ids ``MPI.Init`` will install.  Communicators without a parent (``Create_from_group``) run
the same agreement with their own allgather (:mod:`.from_group`).

Threads (``MPI_THREAD_MULTIPLE``): several agreements may run in one process at once, for
distinct communicators.  Two things keep them apart, both under the MPI lock (the engine's
``lock``): a member says an id is free only by *reserving* it (:class:`Agreements`), so two
agreements never both take one id; and only the agreement with the lowest *priority* among
those running in a process may reserve there (the others answer "busy" and try again), so the
agreement that is lowest everywhere it runs always succeeds and the others follow: no two
agreements can keep defeating each other.  A priority is the same on every member: the parent's
context id, or the key of a parentless call.  An agreed id goes into ``instance.cids`` at once
(a member that is not in the new communicator gives it back, :func:`give_back`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from typing import Any

import attrs

from ..instance import Instance
from .communicator import Communicator
from .internal import allgather

#: The first id agreement hands out (0 and 1 are the world model's predefined communicators).
FIRST_AGREED_CID = 2

# What a member answers about a candidate id.
_HELD, _TAKEN, _BUSY = 0, 1, 2


@attrs.define(eq=False)
class Agreements:
    """The context-id agreements running in one process; read and changed under the MPI lock."""

    #: The priority of every agreement running here (several only with THREAD_MULTIPLE).
    running: list[tuple[Any, ...]] = attrs.field(factory=list)
    #: Candidate ids an agreement holds while its members decide.
    reserved: set[int] = attrs.field(factory=set)


def agree_context_id(parent: Communicator, start: int = FIRST_AGREED_CID) -> int:
    """A context id free on every member of ``parent``, reserved locally by the caller."""
    return agree(
        parent.instance,
        lambda value: allgather(parent, value),
        start,
        priority=(0, parent.context_id),
    )


def agree(
    instance: Instance,
    gather: Callable[[Any], list[Any]],
    start: int = FIRST_AGREED_CID,
    *,
    priority: tuple[Hashable, ...] = (0, -1),
) -> int:
    """The agreement over any set of processes: ``gather(value)`` is their allgather.

    ``priority`` orders concurrent agreements (module docstring); the agreed id is in
    ``instance.cids`` when this returns.
    """
    steps = agreement(instance, start, priority=priority)
    try:
        value = next(steps)
        while True:
            value = steps.send(gather(value))
    except StopIteration as done:
        cid: int = done.value
        return cid
    finally:
        steps.close()


def agreement(
    instance: Instance,
    start: int = FIRST_AGREED_CID,
    *,
    priority: tuple[Hashable, ...] = (0, -1),
) -> Generator[Any, list[Any], int]:
    """The agreement as a generator: it yields each value to allgather, is sent the gathered
    list, and returns the agreed id.

    :func:`agree` drives it with a blocking allgather; a nonblocking ``Comm.Idup`` drives it
    from the progress engine (:mod:`.idup`).  Its priority counts as running from the first
    step until the generator ends or is closed.
    """
    book = instance.cid_agreements
    lock = instance.engine.lock
    with lock:
        book.running.append(priority)
    try:
        while True:
            with lock:
                proposal = instance.lowest_free_cid(start)
                while proposal in book.reserved:
                    proposal = instance.lowest_free_cid(proposal + 1)
            candidate = max((yield proposal))
            with lock:
                if candidate in instance.cids:
                    answer = _TAKEN
                elif candidate in book.reserved or min(book.running) < priority:
                    answer = _BUSY
                else:
                    answer = _HELD
                    book.reserved.add(candidate)
            try:
                answers = yield answer
            finally:
                with lock:
                    book.reserved.discard(candidate)
            with lock:
                if all(a == _HELD for a in answers):
                    instance.cids.add(candidate)
                    return candidate
            if _TAKEN in answers:
                start = candidate + 1
    finally:
        with lock:
            book.running.remove(priority)


def give_back(instance: Instance, cid: int) -> None:
    """Release an agreed id this process does not use (it is not in the new communicator)."""
    with instance.engine.lock:
        instance.cids.discard(cid)
