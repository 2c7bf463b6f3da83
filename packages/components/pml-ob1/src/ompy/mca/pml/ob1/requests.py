"""ob1's request classes and the message record that matching queues.

:class:`SendRequest` and :class:`RecvRequest` are the :class:`~ompy.ompi.completion.CoreRequest`
subclasses ``isend``/``irecv``/``imrecv`` return; they add only the protocol state ob1 needs, in
slots.  :class:`Message` is what an arriving MATCH, RNDV or RGET header becomes: it waits in the
matching queues when nothing is posted and is the opaque object ``improbe`` hands out.
"""

from __future__ import annotations

from typing import Any

import attrs

from ompy.ompi.completion import CoreRequest
from ompy.ompi.constants import ANY_SOURCE, ANY_TAG

from .headers import TYPE_MATCH


class SendRequest(CoreRequest):
    """A send in flight: eager ones complete at once; rendezvous ones keep protocol state."""

    __slots__ = (
        "data",
        "dst_req",
        "handle",
        "id",
        "in_flight",
        "peer",
        "rdma_btl",
        "scheduling",
        "sent",
        "seq",
        "state",
        "stripes",
        "to_send",
    )

    def __init__(self, data: Any, peer: Any, state: Any = None, seq: int = 0) -> None:
        # CoreRequest's fields set here rather than through super().__init__(): one call less
        # on every send (a test checks that both set the same fields).
        self.complete = False
        self.cancelled = False
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.count = 0
        self.error = 0
        self.exception = None
        self.on_complete = None
        self.data = data  # a flat byte view, or the Convertor of a non-contiguous layout
        self.peer = peer  # the BmlEndpoint of the destination
        self.id = 0
        self.dst_req = 0
        self.in_flight = 0
        self.sent = 0
        self.to_send = 0
        self.stripes: list[Stripe] = []
        self.scheduling = False
        self.handle = None
        self.rdma_btl = None
        self.state = state  # the CommState it was sent on (None: a private carrier)
        self.seq = seq  # its sequence number there: how a cancel names an eager message

    def cancel(self) -> None:
        """Ask the receiver to withdraw the message (ob1's ``cancel_send``); the answer comes
        through progress and completes the request, cancelled or not."""
        state = self.state
        if state is not None and state.cancel_send is not None and not self.cancelled:
            state.cancel_send(self)


class Stripe:
    """The part ``[offset, end)`` of a long message that one BTL module carries."""

    __slots__ = ("btl", "end", "offset")

    def __init__(self, btl: Any, offset: int, end: int) -> None:
        self.btl = btl
        self.offset = offset
        self.end = end


class RecvRequest(CoreRequest):
    """A receive: posted, then matched, then (for long messages) filled fragment by fragment.

    ``count`` is set at match time to the bytes that will land (the smaller of the message and
    the buffer); ``msg_length`` is the sender's full length, for the truncation check.

    ``view`` None asks the PML to size the buffer: at match time it becomes a fresh writable
    view of exactly the message's length (pickled objects, whose size only the sender knows,
    are received this way without a probe, so they keep their place in MPI's matching order).
    """

    __slots__ = (
        "id",
        "matched",
        "msg_length",
        "peer",
        "pending_gets",
        "received",
        "state",
        "view",
        "want_source",
    )

    def __init__(self, view: Any, state: Any, source: int) -> None:
        self.complete = False  # CoreRequest's fields, inline as in SendRequest
        self.cancelled = False
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.count = 0
        self.error = 0
        self.exception = None
        self.on_complete = None
        self.view = view  # a flat byte view, a PackedTarget, or None (sized by the message)
        self.state = state  # the CommState it is posted in (None for imrecv)
        self.want_source = source
        self.matched = False
        self.id = 0
        self.received = 0
        self.msg_length = 0
        self.pending_gets = 0
        self.peer = None

    def cancel(self) -> None:
        """Withdraw the receive if it is still posted; a matched receive cannot be cancelled."""
        if self.complete or self.matched or self.state is None:
            return
        if self.state.matching.cancel(self, self.want_source):
            self.cancelled = True
            self.finish()


class Message:
    """An arrived message header (MATCH, RNDV or RGET) and the data that came with it.

    ``data`` is the payload view while inside the BTL callback and a private copy once the
    message is retained (unexpected, early, or deferred).  ``count`` is the message's full
    length in bytes, as probes report it.  ``src_req`` is the sender's request id of a
    rendezvous and the sequence number of an eager message (what a CANCEL names it by).
    """

    __slots__ = (
        "consumed",
        "ctx",
        "data",
        "flags",
        "kind",
        "module",
        "msg_length",
        "rkey",
        "source",
        "src_req",
        "tag",
    )

    def __init__(  # noqa: PLR0917 - built once per arriving header: positional is cheapest
        self,
        kind: int,
        flags: int,
        ctx: int,
        source: int,
        tag: int,
        data: Any,
        msg_length: int,
        src_req: int,
        rkey: int,
        module: Any,
    ) -> None:
        self.kind = kind
        self.flags = flags
        self.ctx = ctx
        self.source = source
        self.tag = tag
        self.data = data
        self.msg_length = msg_length
        self.src_req = src_req
        self.rkey = rkey
        self.module = module
        self.consumed = False

    @property
    def count(self) -> int:
        return self.msg_length

    def __repr__(self) -> str:
        kind = {TYPE_MATCH: "eager"}.get(self.kind, "rendezvous")
        return (
            f"<ob1 message ({kind}) ctx={self.ctx} source={self.source} tag={self.tag} "
            f"bytes={self.msg_length}>"
        )


@attrs.frozen
class ProbeStatus:
    """What ``iprobe`` reports about a message it found: like a receive's status."""

    source: int
    tag: int
    count: int
    error: int = 0
    cancelled: bool = False
