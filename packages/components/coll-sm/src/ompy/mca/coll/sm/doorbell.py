"""Waking a rank that sleeps in the progress engine: a doorbell socket and a heavy fence.

A rank whose wait outlasts the engine's spin budget raises its SLEEPING word, issues the heavy
side of an asymmetric fence and checks its condition once more before it blocks on its doorbell
(:class:`ompy.opal.doorbell.Doorbell`: a datagram socket in the job's private, 0700 session
directory, so that only the job's own processes can ring it).  A rank that stores a counter
then looks at the SLEEPING words and rings the sleepers' doorbells.  Storing "sleeping" and then
loading a counter (and the converse on the other side) is the one store-load pair that even
x86-64 may reorder; the heavy side of an asymmetric fence on the rare, sleeping side
(:class:`ompy.opal.membarrier.Fence`) orders it without a fence on the fast path.  Without
membarrier a missed ring costs at most the engine's longest sleep (``opal_progress_block_max_ms``).
"""

from __future__ import annotations

from ompy.opal.doorbell import Doorbell


def coll_doorbell(rank: int) -> Doorbell:
    """A doorbell for one communicator of this rank (the rank only makes the name readable)."""
    return Doorbell(f"coll-sm-{rank}")


__all__ = ["Doorbell", "coll_doorbell"]
