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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..instance import Instance
from .communicator import Communicator
from .internal import allgather

#: The first id agreement hands out (0 and 1 are the world model's predefined communicators).
FIRST_AGREED_CID = 2


def agree_context_id(parent: Communicator, start: int = FIRST_AGREED_CID) -> int:
    """A context id free on every member of ``parent``, reserved locally by the caller."""
    return agree(parent.instance, lambda value: allgather(parent, value), start)


def agree(
    instance: Instance, gather: Callable[[Any], list[Any]], start: int = FIRST_AGREED_CID
) -> int:
    """The agreement over any set of processes: ``gather(value)`` is their allgather."""
    while True:
        candidate = max(gather(instance.lowest_free_cid(start)))
        free = candidate not in instance.cids
        if all(gather(free)):
            return candidate
        start = candidate + 1
