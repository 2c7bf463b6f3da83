"""The receiving side of ob1's protocols: BTL callbacks, matching, delivery.

Each header type has its own BTL tag (``TAG_PML + type``), so the transport calls the right
handler directly.  MATCH, RNDV and RGET become a :class:`~ompy.mca.pml.ob1.requests.Message`
and go through the communicator's matching; a match lands in :meth:`RecvSide._matched`, which
copies eager data straight from the fragment into the receive buffer, answers a RNDV with ACK,
or pulls an RGET's data with ``get``.  FRAG fragments carry their offset and land directly in
the buffer of the receive they belong to.  A receive into a non-contiguous layout has a
:class:`~.packing.PackedTarget` as its view: each copy into it unpacks at its stream position.

Two situations keep an arriving header for later (with a copy, since the fragment's memory is
valid only during the callback): a context id no communicator has yet (the sender's
``add_comm`` ran first; replayed by ``add_comm``), and a header arriving while another is being
matched (a completion callback sent to this very process): matching is not reentrant, so the
nested one waits until the outer match returns.
"""

from __future__ import annotations

import contextlib
from collections import deque
from functools import partial
from typing import Any

from ompy.ompi.errors import ERR_OTHER, ERR_TRUNCATE
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.mca.btl import BtlPeerError, MemHandle

from .comm import CommState
from .headers import ACK, FIN, FRAG, MATCH, RGET, RNDV, TYPE_ACK, TYPE_FIN, TYPE_MATCH, TYPE_RNDV
from .packing import PackedTarget, unpack_piece
from .requests import Message, RecvRequest

_EMPTY = memoryview(b"")
_MATCH_UNPACK = MATCH.struct.unpack_from
_MATCH_SIZE = MATCH.size
_RNDV_UNPACK = RNDV.struct.unpack_from
_RNDV_SIZE = RNDV.size
_RGET_UNPACK = RGET.struct.unpack_from
_ACK_PACK = ACK.struct.pack
_FRAG_UNPACK = FRAG.struct.unpack_from
_FRAG_SIZE = FRAG.size
_FIN_PACK = FIN.struct.pack
#: The largest piece of an RGET read aside for a non-contiguous receive (then unpacked).
_PACKED_PIECE = 1 << 20
#: Retained payloads up to this size are copied with bytes(); larger ones through a memoryview.
_SMALL_COPY = 1 << 16


def _copy(data: Any) -> Any:
    if len(data) <= _SMALL_COPY:
        return bytes(data)
    copy = bytearray(len(data))
    memoryview(copy)[:] = data
    return copy


class RecvSide:
    """Receive protocols; mixed into :class:`~ompy.mca.pml.ob1.module.Ob1PmlModule`."""

    _comms: dict[int, CommState]
    _recvs: dict[int, RecvRequest]
    _orphans: dict[int, list[tuple[Any, int, bytes]]]
    _deferred: deque
    _delivering: bool

    # -- match headers ----------------------------------------------------------------------

    def _recv_match(self, module: Any, tag: int, view: memoryview) -> None:
        _type, flags, seq, ctx, src, mtag = _MATCH_UNPACK(view)
        state = self._comms.get(ctx)
        if state is None or self._delivering:
            self._keep(ctx, state, module, tag, view)
            return
        self._delivering = True
        try:
            request = state.matching.take_posted(src, mtag, seq)
            length = len(view) - _MATCH_SIZE
            if request is not None:
                target = request.view
                if target is None:  # sized by the message
                    target = request.view = memoryview(bytearray(length))
            if request is not None and length <= len(target):
                # The common case, without a Message: a posted receive, in order, that fits.
                request.matched = True
                request.source = src
                request.tag = mtag
                if length:
                    target[:length] = view[_MATCH_SIZE:]
                request.count = length
                callback = request.on_complete  # request.finish(), inlined
                request.complete = True
                if callback is not None:
                    request.on_complete = None
                    callback(request)
            else:
                data = view[_MATCH_SIZE:]
                message = Message(TYPE_MATCH, flags, ctx, src, mtag, data, length, seq, 0, module)
                if request is not None:
                    self._matched(request, message)  # truncated: the general delivery says so
                else:
                    state.arrive(src, mtag, seq, message)
        finally:
            self._delivering = False
        if self._deferred:
            self._replay_deferred()

    def _recv_rndv(self, module: Any, tag: int, view: memoryview) -> None:
        _type, flags, seq, ctx, src, mtag, length, src_req = _RNDV_UNPACK(view)
        state = self._comms.get(ctx)
        if state is None or self._delivering:
            self._keep(ctx, state, module, tag, view)
            return
        message = Message(
            TYPE_RNDV, flags, ctx, src, mtag, view[_RNDV_SIZE:], length, src_req, 0, module
        )
        self._arrive(state, src, mtag, seq, message)

    def _recv_rget(self, module: Any, tag: int, view: memoryview) -> None:
        _type, flags, seq, ctx, src, mtag, length, src_req, _frag, key = _RGET_UNPACK(view)
        state = self._comms.get(ctx)
        if state is None or self._delivering:
            self._keep(ctx, state, module, tag, view)
            return
        message = Message(_type, flags, ctx, src, mtag, _EMPTY, length, src_req, key, module)
        self._arrive(state, src, mtag, seq, message)

    def _arrive(self, state: CommState, src: int, mtag: int, seq: int, message: Message) -> None:
        """Hand a RNDV or RGET message to matching; headers that arrive meanwhile wait."""
        self._delivering = True
        try:
            state.arrive(src, mtag, seq, message)
        finally:
            self._delivering = False
        if self._deferred:
            self._replay_deferred()

    def _keep(self, ctx: int, state: CommState | None, module: Any, tag: int, view: Any) -> None:
        """Keep a header (copied) for later: an unknown context, or a nested arrival."""
        entry = (module, tag, _copy(view))
        if state is None:
            self._orphans.setdefault(ctx, []).append(entry)
        else:
            self._deferred.append(entry)

    def _replay_deferred(self) -> None:
        deferred = self._deferred
        handlers = self._handlers
        while deferred and not self._delivering:
            module, tag, data = deferred.popleft()
            handlers[tag](module, tag, memoryview(data))

    def _retain(self, message: Message) -> Message:
        """Matching keeps ``message`` beyond the callback: copy its payload out of the fragment."""
        data = message.data
        if type(data) is memoryview and len(data):
            message.data = _copy(data)
        return message

    # -- delivery ---------------------------------------------------------------------------

    def _matched(self, request: RecvRequest, message: Message) -> None:
        """``request`` matched ``message``: deliver it (eager) or start its protocol."""
        request.matched = True
        request.source = message.source
        request.tag = message.tag
        if request.view is None:  # sized by the message
            request.view = memoryview(bytearray(message.msg_length))
        kind = message.kind
        if kind == TYPE_MATCH:
            data = message.data
            length = len(data)
            view = request.view
            if length <= len(view):
                if length:
                    view[:length] = data
                request.count = length
                request.finish()
            else:
                room = len(view)
                view[:] = data[:room]
                request.count = room
                request.msg_length = length
                self._truncated(request)
        elif kind == TYPE_RNDV:
            self._matched_rndv(request, message)
        else:
            self._matched_rget(request, message)

    def _matched_rndv(self, request: RecvRequest, message: Message) -> None:
        peer = self._comms[message.ctx].endpoints[message.source]
        data = message.data
        first = len(data)
        total = message.msg_length
        view = request.view
        room = len(view)
        expected = total if total <= room else room
        take = first if first <= expected else expected
        if take:
            view[:take] = data if take == first else data[:take]
        request.count = expected
        request.msg_length = total
        request.received = take
        wanted = expected - take
        if wanted:
            request.id = self._next_id()
            request.peer = peer
            self._recvs[request.id] = request
        btl = peer.eager_single or peer.next_eager()
        header = _ACK_PACK(TYPE_ACK, 0, message.src_req, request.id, first, wanted)
        self._send_control(btl, header, _EMPTY, TYPE_ACK)
        if not wanted:
            self._complete(request)

    def _recv_frag(self, module: Any, tag: int, view: memoryview) -> None:
        _type, _flags, offset, _src_req, dst_req = _FRAG_UNPACK(view)
        request = self._recvs.get(dst_req)
        if request is None:
            raise self._protocol_error(f"a FRAG for unknown receive request {dst_req}")
        data = view[_FRAG_SIZE:]
        length = len(data)
        request.view[offset : offset + length] = data
        request.received += length
        if request.received >= request.count:
            del self._recvs[dst_req]
            self._complete(request)

    def _matched_rget(self, request: RecvRequest, message: Message) -> None:
        peer = self._comms[message.ctx].endpoints[message.source]
        btl = peer.find(message.module)
        if btl is None:
            raise self._protocol_error(
                f"an RGET from rank {message.source} arrived over {message.module.name}, which "
                "does not reach that rank"
            )
        total = message.msg_length
        view = request.view
        length = total if total <= len(view) else len(view)
        request.count = length
        request.msg_length = total
        request.peer = peer
        request.id = message.src_req
        if not length:
            self._gets_done(request, btl, None)
            return
        handle = MemHandle(message.rkey, total)
        piece = btl.rdma_frag_size or length
        packed = type(view) is PackedTarget
        if packed and piece > _PACKED_PIECE:  # read aside: in bounded pieces, not whole
            piece = _PACKED_PIECE
        offsets = range(0, length, piece)
        request.pending_gets = len(offsets)
        for offset in offsets:
            end = min(offset + piece, length)
            if packed:  # a non-contiguous layout: read the piece aside, unpack it on arrival
                into = memoryview(bytearray(end - offset))
                done = partial(self._got_piece, request, btl, into, offset)
            else:
                into = view[offset:end]
                done = partial(self._got, request, btl)
            try:
                btl.get(btl.endpoint, into, handle, offset, done)
            except Exception as error:  # the module refused: report it through the FIN
                done(error)

    def _got_piece(
        self,
        request: RecvRequest,
        btl: Any,
        piece: memoryview,
        offset: int,
        error: BaseException | None,
    ) -> None:
        if error is None:
            unpack_piece(request.view, offset, piece)
        self._got(request, btl, error)

    def _got(self, request: RecvRequest, btl: Any, error: BaseException | None) -> None:
        if error is not None and request.exception is None:
            request.exception = error
        request.pending_gets -= 1
        if not request.pending_gets:
            self._gets_done(request, btl, request.exception)

    def _gets_done(self, request: RecvRequest, btl: Any, error: BaseException | None) -> None:
        status = ERR_OTHER if error is not None else 0
        header = _FIN_PACK(TYPE_FIN, 0, status, request.id, request.count)
        peer = request.peer
        # A sender that is gone (its BTL reported that) gets no FIN; the request still ends.
        with contextlib.suppress(BtlPeerError):
            self._send_control(peer.eager_single or peer.next_eager(), header, _EMPTY, TYPE_FIN)
        if error is not None:
            request.exception = None
            request.fail(
                ERR_OTHER,
                MPIException(
                    ERR_OTHER,
                    f"reading a {request.msg_length}-byte message from rank {request.source} "
                    f"over {btl.module.name} failed: {error}",
                ),
            )
        else:
            self._complete(request)

    # -- completion -------------------------------------------------------------------------

    def _complete(self, request: RecvRequest) -> None:
        if request.msg_length > request.count:
            self._truncated(request)
        else:
            request.finish()

    @staticmethod
    def _truncated(request: RecvRequest) -> None:
        request.fail(
            ERR_TRUNCATE,
            MPIException(
                ERR_TRUNCATE,
                f"a message of {request.msg_length} bytes from rank {request.source} "
                f"(tag {request.tag}) does not fit the receive buffer of {len(request.view)} "
                f"bytes; the first {request.count} bytes were delivered",
            ),
        )
