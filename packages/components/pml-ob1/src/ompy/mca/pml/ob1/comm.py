"""ob1's per-communicator state (Open MPI's ``mca_pml_ob1_comm_t``).

``add_comm`` stores one :class:`CommState` in ``comm.pml_state``: the communicator's context
id and rank, the BML endpoint of each of its ranks (so a send needs one list index), the ring
a fast-path receive polls for each rank on this node, the immediate send of a short message to
each rank, and its
:class:`~ompy.mca.pml.ob1.matching.MatchingState`.  The matching state's methods are bound
once here, for the hot path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ompy.ompi.mca.bml import BmlEndpoint
from ompy.opal.mca.btl import ImmediateSend, PeerRing

from .matching import MatchingState


class CommState:
    """Matching queues and peer endpoints of one communicator."""

    __slots__ = (
        "arrive",
        "cancel_send",
        "ctx",
        "endpoints",
        "immediate",
        "keys",
        "matching",
        "next_seq",
        "rank",
        "rings",
        "send_seq",
        "size",
    )

    def __init__(
        self,
        ctx: int,
        rank: int,
        endpoints: Sequence[BmlEndpoint],
        on_match: Callable[[Any, Any], None],
        retain: Callable[[Any], Any],
        *,
        cancel_send: Callable[[Any], None] | None = None,
        keys: Sequence[int] = (),
        rings: Sequence[PeerRing | None] = (),
        immediate: Sequence[ImmediateSend | None] = (),
    ) -> None:
        self.ctx = ctx
        #: The PML key (world rank or index) of each peer, by rank in the communicator.
        self.keys = tuple(keys)
        self.rank = rank
        self.size = len(endpoints)
        self.endpoints = list(endpoints)
        self.matching = MatchingState(self.size, on_match=on_match, retain=retain)
        self.arrive = self.matching.arrive
        self.next_seq = self.matching.next_send_sequence
        #: The matching state's per-peer send sequence numbers, for the PML's inlined increment.
        self.send_seq = self.matching.send_sequences
        #: Per rank, the ring its process writes into that a blocking receive may poll in
        #: place (the fast path, :mod:`.fastpath`), or None; resolved once, here.
        self.rings: list[PeerRing | None] = list(rings) if rings else [None] * self.size
        #: Per rank, the immediate send of a MATCH record to it through its only eager module
        #: (:meth:`~ompy.opal.mca.btl.BtlModule.immediate`, or the header packed for
        #: ``sendi``), or None when several modules share it; resolved once, here.
        self.immediate: list[ImmediateSend | None] = (
            list(immediate) if immediate else [None] * self.size
        )
        #: The PML's ``cancel_send(request)``, for a send request's ``cancel``.
        self.cancel_send = cancel_send

    def __repr__(self) -> str:
        m = self.matching
        return (
            f"<ob1 comm ctx={self.ctx} rank={self.rank}/{self.size}: {m.posted_count} posted, "
            f"{m.unexpected_count} unexpected, {m.held_count} early>"
        )
