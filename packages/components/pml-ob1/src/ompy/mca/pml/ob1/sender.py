"""The sending side of ob1's protocols.

- **eager** (message + MATCH header fits the eager module's ``eager_limit``): ``sendi`` first,
  else ``prepare_src`` (which copies) + ``send``; the request completes at once, since the
  transport holds the data.
- **rendezvous** (longer, or synchronous): a RNDV header with as much data as fits an eager
  fragment, the sender's request id and the total length.  The receiver answers ACK once it
  matched, saying from which offset and how many bytes it still wants (fewer when its buffer is
  shorter: truncated data is never sent).  The sender then streams FRAG fragments, striped over
  the peer's ``send`` modules in proportion to their bandwidth, at most ``send_pipeline_depth``
  descriptors in flight per request, and completes when the last one left.
- **RGET** (long message, and the peer is reached by a module offering get): the sender
  registers its buffer and sends RGET with the memory key; the receiver pulls the data with
  ``get`` and answers FIN, which completes the send.

Synchronous sends always take the rendezvous path, so they complete only after the ACK (or FIN),
that is after the receiver matched.  When a pool has no descriptor the work is queued and
retried by :meth:`progress`.

A request's ``data`` is a flat byte view, or the ``Convertor`` of a non-contiguous layout: then
each fragment is packed into its descriptor at its stream position (:mod:`.packing`), except
for RGET, which reads contiguous memory: a long non-contiguous message the peer could get is
packed whole once into a buffer of its own, which the receiver then reads in one piece.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import Any

from ompy.ompi.errors import ERR_OTHER
from ompy.ompi.errors import Exception as MPIException
from ompy.opal.mca.btl import DescriptorFlags

from .headers import (
    ACK,
    FIN,
    FLAG_ACK,
    FLAG_CONTIG,
    FRAG,
    RGET,
    RNDV,
    TYPE_FRAG,
    TYPE_RGET,
    TYPE_RNDV,
)
from .packing import packed_descriptor, packed_prefix
from .requests import SendRequest, Stripe

_EMPTY = memoryview(b"")
_FRAG_FLAGS = DescriptorFlags.OWNERSHIP | DescriptorFlags.ALWAYS_CALLBACK
_RNDV_PACK = RNDV.struct.pack
_RNDV_SIZE = RNDV.size
_RGET_PACK = RGET.struct.pack
_ACK_UNPACK = ACK.struct.unpack_from
_FRAG_PACK_INTO = FRAG.struct.pack_into
_FRAG_SIZE = FRAG.size
_FIN_UNPACK = FIN.struct.unpack_from


class SendSide:
    """Send protocols; mixed into :class:`~ompy.mca.pml.ob1.module.Ob1PmlModule`."""

    _sends: dict[int, SendRequest]
    _pending: deque
    depth: int
    use_rdma: bool

    # -- putting bytes on a module ----------------------------------------------------------

    def _send_buffer(self, btl: Any, header: bytes, payload: memoryview, tag: int) -> bool:
        """Header + payload through a descriptor; False when the module has none free now."""
        descriptor = btl.prepare_src(btl.endpoint, payload, len(header))
        if descriptor is None:
            return False
        descriptor.segments[0][: len(header)] = header
        btl.send(btl.endpoint, descriptor, tag)
        return True

    def _send_control(self, btl: Any, header: bytes, payload: memoryview, tag: int) -> None:
        """Send a header (and a little data) now, or queue it for :meth:`progress`."""
        if btl.sendi(btl.endpoint, header, payload, tag):
            return
        if not self._send_buffer(btl, header, payload, tag):
            self._pending.append(partial(self._send_buffer, btl, header, payload, tag))

    def _retry_eager(
        self, request: SendRequest, btl: Any, header: bytes, payload: memoryview, tag: int
    ) -> bool:
        if not self._send_buffer(btl, header, payload, tag):
            return False
        request.finish()
        return True

    # -- rendezvous -------------------------------------------------------------------------

    def _start_rndv(
        self,
        request: SendRequest,
        btl: Any,
        seq: int,
        state: Any,
        tag: int,
        *,
        synchronous: bool,
    ) -> SendRequest:
        ctx = state.ctx
        rank = state.rank
        data = request.data
        packer = None if type(data) is memoryview else data
        length = len(data) if packer is None else packer.packed_size
        request.id = rid = self._next_id()
        self._sends[rid] = request
        flags = FLAG_ACK if synchronous else 0
        get_btl = request.peer.rdma_get
        if (
            get_btl is not None
            and self.use_rdma
            and length >= get_btl.min_rdma_size
            and length + _RNDV_SIZE > btl.eager_limit
        ):
            if packer is not None:
                # RGET reads contiguous memory: pack the stream once (one vectorised copy)
                # and offer that.  Streaming FRAGs through the fragment rings instead costs a
                # ring-full wait per fragment, which on a loaded machine is a time slice each.
                request.data = data = packer.pack_all()
            handle = get_btl.register_mem(data)
            request.handle = handle
            request.rdma_btl = get_btl
            header = _RGET_PACK(
                TYPE_RGET, flags | FLAG_CONTIG, seq, ctx, rank, tag, length, rid, 0, handle.key
            )
            self._send_control(get_btl, header, _EMPTY, TYPE_RGET)
        else:
            first = max(btl.eager_limit - _RNDV_SIZE, 0)
            header = _RNDV_PACK(TYPE_RNDV, flags, seq, ctx, rank, tag, length, rid)
            if packer is not None:
                payload = packed_prefix(packer, min(first, length))
            else:
                payload = data[:first] if first < length else data
            self._send_control(btl, header, payload, TYPE_RNDV)
        return request

    def _recv_ack(self, module: Any, tag: int, view: memoryview) -> None:
        """The receiver matched: stream what it still wants, or complete."""
        _type, _flags, src_req, dst_req, offset, size = _ACK_UNPACK(view)
        request = self._sends.get(src_req)
        if request is None:
            raise self._protocol_error(f"an ACK for unknown send request {src_req}")
        if not size:
            del self._sends[src_req]
            request.finish()
            return
        request.dst_req = dst_req
        request.to_send = size
        request.stripes = self._stripes(request.peer.send, offset, size)
        self._schedule(request)

    @staticmethod
    def _stripes(btls: list, offset: int, size: int) -> list[Stripe]:
        """Cut ``[offset, offset + size)`` among ``btls`` in proportion to their weights."""
        if len(btls) == 1 or size < 2 * btls[0].max_send_size:
            return [Stripe(btls[0], offset, offset + size)]
        stripes = []
        start, end = offset, offset + size
        last = len(btls) - 1
        for index, btl in enumerate(btls):
            share = end - start if index == last else int(size * btl.weight)
            if share > 0:
                stripes.append(Stripe(btl, start, start + share))
                start += share
        return stripes

    def _schedule(self, request: SendRequest) -> None:
        """Put FRAG fragments in flight, round-robin over the stripes, up to the depth."""
        if request.scheduling:
            return  # a completion inside send(): the running loop continues
        request.scheduling = True
        data = request.data
        packer = None if type(data) is memoryview else data
        depth = self.depth
        rid = request.id
        dst = request.dst_req
        completion = self._frag_sent
        try:
            busy = True
            while busy and request.in_flight < depth:
                busy = False
                for stripe in request.stripes:
                    offset = stripe.offset
                    if offset >= stripe.end:
                        continue
                    if request.in_flight >= depth:
                        break
                    btl = stripe.btl
                    if packer is None:
                        descriptor = btl.prepare_src(
                            btl.endpoint, data[offset : stripe.end], _FRAG_SIZE, _FRAG_FLAGS
                        )
                    else:  # packed into the fragment at its position of the stream
                        descriptor = packed_descriptor(
                            btl, packer, offset, stripe.end, _FRAG_SIZE, _FRAG_FLAGS
                        )
                    if descriptor is None:
                        self._pending.append(partial(self._resume, request))
                        return
                    _FRAG_PACK_INTO(descriptor.segments[0], 0, TYPE_FRAG, 0, offset, rid, dst)
                    taken = descriptor.data_length
                    stripe.offset = offset + taken
                    btl.bytes_scheduled += taken
                    descriptor.completion = completion
                    descriptor.cbdata = request
                    request.in_flight += 1
                    btl.send(btl.endpoint, descriptor, TYPE_FRAG)
                    busy = True
        finally:
            request.scheduling = False

    def _resume(self, request: SendRequest) -> bool:
        if not request.complete:
            self._schedule(request)
        return True

    def _frag_sent(
        self, module: Any, endpoint: Any, descriptor: Any, error: BaseException | None
    ) -> None:
        request = descriptor.cbdata
        request.in_flight -= 1
        if request.complete:
            return
        if error is not None:
            self._sends.pop(request.id, None)
            request.fail(
                ERR_OTHER,
                MPIException(
                    ERR_OTHER, f"sending to rank {endpoint.proc.rank} over {module.name}: {error}"
                ),
            )
            return
        request.sent += descriptor.data_length
        if request.sent >= request.to_send:
            self._sends.pop(request.id, None)
            request.finish()
        elif not request.scheduling:
            self._schedule(request)

    @staticmethod
    def _deregister(request: SendRequest) -> None:
        """Release the memory registration of an RGET send, if it holds one."""
        if request.handle is not None:
            request.rdma_btl.deregister_mem(request.handle)
            request.handle = None

    def _recv_fin(self, module: Any, tag: int, view: memoryview) -> None:
        """The receiver pulled the data of an RGET: release the registration, complete."""
        _type, _flags, status, frag, _size = _FIN_UNPACK(view)
        request = self._sends.pop(frag, None)
        if request is None:
            raise self._protocol_error(f"a FIN for unknown send request {frag}")
        self._deregister(request)
        if status:
            request.fail(
                status,
                MPIException(status, f"rank {request.peer.proc.rank} could not read the message"),
            )
        else:
            request.finish()
