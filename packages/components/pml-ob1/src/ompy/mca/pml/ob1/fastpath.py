"""The small-message fast path of a blocking receive: one peer's ring, matched inline.

In the spirit of Open MPI's shared-memory fast boxes: when a blocking receive names one source
whose process writes into a ring this process can poll (btl sm's :class:`PeerRing`), and
matching shows that only that source's next message can satisfy it (:meth:`MatchingState.quiet
<ompy.mca.pml.ob1.matching.MatchingState.quiet>`: no wildcard or earlier receive posted,
nothing unexpected or held back from it), the receive polls that ring itself and matches the
record in place: no request, no posted receive, no progress pass over every transport, no
callback.  Anything else (another header type, another communicator, a tag that does not
match, a message that would be truncated) is left in the ring untouched and the caller takes
the general path, whose next progress pass delivers the record as usual; so wildcards,
probes, ordering, truncation and cancellation keep exactly their general-path semantics.

Waiting: the poll spins at most ``pml_ob1_fast_spins`` times (yielding the processor on each
empty poll where the engine yields when idle), and only while this process owes nothing to
anyone (no rendezvous send in flight, no retry queued), because no other transport moves
meanwhile; then the general path's wait takes over, with its own spinning and its sleep on
the transports' descriptors.  With ``MPI_THREAD_MULTIPLE`` the call runs under the MPI lock
(``recv_now`` is a locked PML entry point) and looks once, without spinning.

The design, and its cost frame by frame, is in docs/point-to-point.md.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from .comm import CommState
from .headers import MATCH, TYPE_MATCH

_MATCH_STRUCT = MATCH.struct
_MATCH_SIZE = MATCH.size
_sched_yield = os.sched_yield


class FastSide:
    """The fast receive; mixed into :class:`~ompy.mca.pml.ob1.module.Ob1PmlModule`."""

    engine: Any
    fast_spins: int
    _delivering: bool
    _sends: dict
    _pending: deque

    def recv_now(
        self, view: memoryview | None, source: int, tag: int, comm: Any
    ) -> tuple[int, int, memoryview] | None:
        """Receive from ``source`` inline if the fast path applies (see the module); else None.

        ``view`` is a flat writable byte view, or None for a buffer of the message's size.
        Returns ``(tag, count, view)`` of the received message.
        """
        state: CommState = comm.pml_state
        if state is None:
            return None  # not added, or freed: the general path says which
        ring = state.rings[source]
        if ring is None or self._delivering:
            return None
        matching = state.matching
        if not matching.quiet(source):
            return None
        record = ring.poll_header(_MATCH_STRUCT)  # record and MATCH header in one unpack
        if record is None:
            engine = self.engine
            if engine.threaded or self._sends or self._pending:
                return None  # look once only: others' work must not wait for this spin
            spins = self.fast_spins
            idle_yield = engine.yield_when_idle
            while record is None:
                if not spins:
                    return None
                spins -= 1
                if idle_yield:
                    _sched_yield()
                record = ring.poll_header(_MATCH_STRUCT)
        (length, kind, _type, _flags, seq, ctx, src, mtag), body = record
        if kind != TYPE_MATCH:
            return None  # (its fields are not a MATCH header's: nothing else is looked at)
        length -= _MATCH_SIZE
        if (
            ctx != state.ctx
            or src != source
            or (view is not None and length > len(view))  # truncation: the general path's
            or not matching.claim(source, seq, mtag, tag)
        ):
            return None
        if view is None:
            view = memoryview(bytearray(body))
        elif length:
            view[:length] = body
        ring.release()
        return mtag, length, view
