"""Cancelling a send: the receiver withdraws the message if nothing has matched it yet.

``cancel_send`` sends CANCEL to the receiver, naming the message by the communicator's context
id, the sender's rank and either the eager message's sequence number or the rendezvous'
request id.  The receiver, which owns the matching, looks for it among its unexpected messages:
found once, it is removed, so no receive and no probe will ever see it, and the answer says
FLAG_WITHDRAWN; otherwise (already matched, taken by ``mprobe``, still held back behind an
earlier message, or not arrived yet) the answer says it stays, and the send completes as if no
cancel had been asked (MPI lets a cancel fail; the status's ``Is_cancelled()`` tells which).

While the answer is on its way the send request is not complete, so ``Wait`` returns only
once the outcome is known; the receiver answers from its progress, that is from any MPI call
it makes (as with every protocol message).  A withdrawn rendezvous is forgotten by the sender
(no ACK will come) and its RDMA registration released.  The CANCEL travels after the message
over the peer's eager module; if the communicator does not exist at the receiver yet, both wait
there together and are replayed in order when it is created.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from ompy.ompi.errors import ERR_OTHER
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.mca.btl import BtlError

from .comm import CommState
from .headers import (
    CANCEL,
    CANCELED,
    FLAG_BY_REQUEST,
    FLAG_WITHDRAWN,
    TYPE_CANCEL,
    TYPE_CANCELED,
    TYPE_MATCH,
)
from .requests import SendRequest

_EMPTY = memoryview(b"")
_CANCEL_PACK = CANCEL.struct.pack
_CANCEL_UNPACK = CANCEL.struct.unpack_from
_CANCELED_PACK = CANCELED.struct.pack
_CANCELED_UNPACK = CANCELED.struct.unpack_from


class CancelSide:
    """Send cancellation; mixed into :class:`~ompy.mca.pml.ob1.module.Ob1PmlModule`."""

    _comms: dict[int, CommState]
    _sends: dict[int, SendRequest]
    #: token -> (the request, its rendezvous id or 0, whether it was complete when asked)
    _cancels: dict[int, tuple[SendRequest, int, bool]]
    _deferred: deque
    _delivering: bool

    def cancel_send(self, request: SendRequest) -> None:
        """Ask the receiver to withdraw ``request``'s message (once per request)."""
        if request.exception is not None or any(
            entry[0] is request for entry in self._cancels.values()
        ):
            return  # it failed (nothing reached the receiver to withdraw), or already asked
        state = request.state
        rid = request.id
        token = self._next_id()  # type: ignore[attr-defined]  # the module's id counter
        was_complete = request.complete
        self._cancels[token] = (request, rid, was_complete)
        request.complete = False  # the answer completes it
        header = _CANCEL_PACK(
            TYPE_CANCEL,
            FLAG_BY_REQUEST if rid else 0,
            state.ctx,
            state.rank,
            request.seq,
            rid,
            token,
        )
        peer = request.peer
        try:
            self._send_control(  # type: ignore[attr-defined]  # SendSide's
                peer.eager_single or peer.next_eager(), header, _EMPTY, TYPE_CANCEL
            )
        except BtlError as error:  # the receiver is gone: the send stays as it was
            del self._cancels[token]
            request.complete = was_complete
            raise MPIException(
                ERR_OTHER,
                f"cannot ask rank {peer.proc.rank} to withdraw a message (cancel): {error}",
            ) from error

    def _recv_cancel(self, module: Any, tag: int, view: memoryview) -> None:
        """A sender asks to withdraw a message: do it if it waits unmatched; answer."""
        _type, flags, ctx, src, seq, src_req, token = _CANCEL_UNPACK(view)
        state = self._comms.get(ctx)
        if state is None or self._delivering:
            self._keep(ctx, state, module, tag, view)  # type: ignore[attr-defined]
            return
        if flags & FLAG_BY_REQUEST:
            withdrawn = state.matching.withdraw(
                src, lambda message: message.kind != TYPE_MATCH and message.src_req == src_req
            )
        else:
            withdrawn = state.matching.withdraw(
                src, lambda message: message.kind == TYPE_MATCH and message.src_req == seq
            )
        answer = _CANCELED_PACK(TYPE_CANCELED, FLAG_WITHDRAWN if withdrawn else 0, token)
        peer = state.endpoints[src]
        self._send_control(  # type: ignore[attr-defined]
            peer.eager_single or peer.next_eager(), answer, _EMPTY, TYPE_CANCELED
        )

    def _recv_canceled(self, module: Any, tag: int, view: memoryview) -> None:
        """The receiver's answer: complete the send, cancelled or as it would have."""
        _type, flags, token = _CANCELED_UNPACK(view)
        entry = self._cancels.pop(token, None)
        if entry is None:
            raise self._protocol_error(  # type: ignore[attr-defined]
                f"an answer to unknown cancel {token}"
            )
        request, rid, was_complete = entry
        if flags & FLAG_WITHDRAWN:
            if rid:
                sent = self._sends.pop(rid, None)
                if sent is not None:
                    self._deregister(sent)  # type: ignore[attr-defined]
            request.cancelled = True
            request.finish()
        elif was_complete:
            request.finish()

    def _forget_cancels(self, proc: Any) -> None:
        """``proc`` is unreachable: its answers will not come; the sends complete uncancelled."""
        for token, (request, _rid, was_complete) in list(self._cancels.items()):
            if request.peer.proc.same_process(proc):
                del self._cancels[token]
                if was_complete:
                    request.finish()
