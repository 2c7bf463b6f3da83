"""Tags of collective traffic: one per call, the same on every member, never two in flight.

The coll framework's components own the tags -2..-99 (:mod:`ompy.ompi.api.tags`); ``ANY_TAG``
matches only tags >= 0, so no user receive ever takes a collective's message.  MPI requires the
members of a communicator to call its collectives in the same order, so a per-communicator call
counter is the same on every member: call ``n`` uses tag ``-2 - (n mod 98)``.

Two calls that share a tag (98 calls apart) must not be in flight together, or a receive of
one could match a message of the other.  So a call waits for the earlier call on its tag to
complete before it starts: :func:`next_tag` (blocking collectives) progresses until it has,
:func:`claim_tag` (schedules) returns it so the schedule starts after it.  Both sides of every
pair then post their operations of one call before those of the next call on the tag, and MPI's
non-overtaking rule keeps them apart.

Every collective call that moves point-to-point messages draws exactly one tag.  A module that
moves none (shared memory, hardware) need not draw: the table is the same on every member, so
the members' counters stay equal either way.
"""

from __future__ import annotations

from typing import Any, Final

#: The first and last tag the coll framework uses.
FIRST_TAG: Final = -2
LAST_TAG: Final = -99
#: How many calls can be in flight on one communicator before a call waits for an older one.
TAGS: Final = FIRST_TAG - LAST_TAG + 1


def _draw(comm: Any) -> int:
    table = comm.coll
    sequence = table.sequence
    table.sequence = sequence + 1
    return FIRST_TAG - sequence % TAGS


def next_tag(comm: Any) -> int:
    """The tag of a blocking collective call starting now on ``comm``.

    If the call 98 calls earlier is a nonblocking collective still in flight, this progresses
    until it completes (MPI lets a blocking call wait for progress of earlier ones).
    """
    tag = _draw(comm)
    earlier = comm.coll.inflight.pop(tag, None)
    if earlier is not None and not earlier.complete:
        comm.engine.wait_until(lambda: earlier.complete)
    return tag


def claim_tag(comm: Any) -> tuple[int, Any]:
    """The tag of a nonblocking call, and the earlier call in flight on it (or ``None``)."""
    tag = _draw(comm)
    earlier = comm.coll.inflight.pop(tag, None)
    if earlier is not None and earlier.complete:
        earlier = None
    return tag, earlier
