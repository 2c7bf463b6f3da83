"""Agreeing on the context id of a new communicator (Open MPI's ``ompi_comm_nextcid``).

Every member of the parent proposes the lowest id it has free; the largest proposal is the
candidate; if it is free on every member it is taken, otherwise the members try again above it.
The parent's members all take part, including those that end up outside the new communicator,
so the id is the same everywhere it is used.  An id stays reserved until its communicator is
freed; ids are never reused while a communicator lives.
"""

from __future__ import annotations

from .communicator import Communicator
from .internal import allgather


def agree_context_id(parent: Communicator, start: int = 0) -> int:
    """A context id free on every member of ``parent``, reserved locally by the caller."""
    instance = parent.instance
    while True:
        candidate = max(allgather(parent, instance.lowest_free_cid(start)))
        free = candidate not in instance.cids
        if all(allgather(parent, free)):
            return candidate
        start = candidate + 1
