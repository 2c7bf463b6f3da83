"""The ob1 module: the PML interface (requests in, protocols out) and its lifecycle.

One module per process.  It owns the BML (and through it the BTLs), registers one receive
callback per header type on every BTL module and one progress callback with the engine, and
keeps the per-communicator states.  The send and receive protocols live in
:mod:`~ompy.mca.pml.ob1.sender` and :mod:`~ompy.mca.pml.ob1.receiver`.

Hot path of a short send: one ``CommState`` lookup on the communicator, one list index for the
peer's immediate send (bound at ``add_comm``), one sequence number, and that call, which packs
the MATCH header where the transport puts it.

Ready sends (``SendMode.READY``) are sent like standard ones: whether the receive is posted is
known only at the receiver, and asking would cost a round trip, so an unposted receive is not
detected (MPI makes that case erroneous, not checked).  Buffered sends arrive here already
copied by the API layer and are sent as standard ones.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Sequence
from functools import partial
from typing import Any

from ompy.ompi.constants import ANY_SOURCE
from ompy.ompi.datatype.buffer import BufferSpec
from ompy.ompi.errors import ERR_COMM, ERR_INTERN, ERR_OTHER, ERR_RANK
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.bml import BmlEndpoint
from ompy.ompi.mca.bml.base import SelectedBml
from ompy.ompi.mca.pml import PmlMessage, PmlModule, SendMode
from ompy.ompi.mca.pml.context import PmlContext
from ompy.opal import output
from ompy.opal.datatype.convertor import Convertor
from ompy.opal.mca.btl import BtlError, ImmediateSend, PeerRing
from ompy.opal.proc import Proc

from .cancel import CancelSide
from .comm import CommState
from .fastpath import FastSide
from .headers import (
    MATCH,
    SEQ_MASK,
    TYPE_ACK,
    TYPE_CANCEL,
    TYPE_CANCELED,
    TYPE_FIN,
    TYPE_FRAG,
    TYPE_MATCH,
    TYPE_RGET,
    TYPE_RNDV,
)
from .hetero import ConvertedRecv, typed, wire_stream
from .packing import PackedTarget
from .receiver import RecvSide
from .requests import Message, ProbeStatus, RecvRequest, SendRequest
from .sender import SendSide

_MATCH_PACK = MATCH.struct.pack
_MATCH_SIZE = MATCH.size


def _packed_sendi(btl: Any) -> ImmediateSend:
    """The immediate send of a module without one of its own (tcp, self, sm's locked
    protocol): what its :meth:`~ompy.opal.mca.btl.BtlModule.immediate` contract describes,
    the MATCH header packed and handed to ``sendi`` with the payload."""
    endpoint, sendi, room = btl.endpoint, btl.sendi, btl.eager_limit - _MATCH_SIZE

    def send(payload: memoryview, /, *fields: int) -> bool:
        return len(payload) <= room and sendi(endpoint, _MATCH_PACK(*fields), payload, TYPE_MATCH)

    return send


_SYNCHRONOUS = SendMode.SYNCHRONOUS
_STANDARD = SendMode.STANDARD
_SEQ_MASK = SEQ_MASK


class PmlError(RuntimeError):
    """The PML was used out of order, or the wire protocol was violated."""


class Ob1PmlModule(FastSide, SendSide, RecvSide, CancelSide, PmlModule):
    """Point-to-point messaging over the BML's endpoints."""

    max_tag = 2**31 - 1
    max_contextid = 2**32 - 1

    def __init__(
        self,
        context: PmlContext,
        bml: SelectedBml,
        *,
        depth: int = 16,
        use_rdma: bool = True,
        finalize_timeout: float = 30.0,
        fast_path: bool = True,
        fast_spins: int = 100,
        log: logging.Logger | None = None,
    ) -> None:
        self.context = context
        self.engine = context.progress
        #: Every process's architecture; ``raw_views`` turns false once a peer differs.
        self.archs = context.archs
        self.raw_views = True
        #: The representation this process's typed data must leave in, if not its memory's.
        self._outgoing = context.archs.outgoing()
        self.selected_bml = bml
        self.bml = bml.module
        self.depth = depth
        self.use_rdma = use_rdma
        self.finalize_timeout = finalize_timeout
        #: Whether blocking receives may take the fast path (.fastpath), and how many empty
        #: polls one makes before it takes the general path.
        self.fast_path = fast_path
        self.fast_spins = fast_spins
        #: The component's logger (``ompy.pml.ob1``): nothing on the message path uses it.
        self.log = log if log is not None else output.get_logger("pml", "ob1")
        self._comms: dict[int, CommState] = {}
        self._peers: dict[int, BmlEndpoint] = {}
        #: The key (world rank or index) of every added proc, by its universe rank.
        self._keys: dict[int, int] = {}
        self._sends: dict[int, SendRequest] = {}
        self._recvs: dict[int, RecvRequest] = {}
        self._pending: deque = deque()
        self._cancels: dict[int, tuple[SendRequest, int, bool]] = {}
        self._orphans: dict[int, list[tuple[Any, int, Any]]] = {}
        self._deferred: deque = deque()
        self._delivering = False
        self._errors: list[BaseException] = []
        self._next_id = itertools.count(1).__next__
        self._finalized = False
        #: The endpoint that reaches this very process (sends to it complete locally).
        self._self_peer: BmlEndpoint | None = None
        self._handlers = {
            TYPE_MATCH: self._recv_match,
            TYPE_RNDV: self._recv_rndv,
            TYPE_RGET: self._recv_rget,
            TYPE_ACK: self._recv_ack,
            TYPE_FRAG: self._recv_frag,
            TYPE_FIN: self._recv_fin,
            TYPE_CANCEL: self._recv_cancel,
            TYPE_CANCELED: self._recv_canceled,
        }
        for tag, handler in self._handlers.items():
            self.bml.register(tag, handler)
        self.bml.register_error(self._btl_error)
        self.engine.register(self.progress)

    # -- processes and communicators --------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc], keys: Sequence[int]) -> None:
        """Make ``procs`` reachable, each under its key (world rank or index of a process of
        another job; the transports name it by ``proc.rank``, its universe rank)."""
        keys = list(keys)
        if len(keys) != len(procs):
            raise PmlError(f"add_procs got {len(procs)} procs but {len(keys)} keys")
        for proc, key, endpoint in zip(procs, keys, self.bml.add_procs(procs), strict=True):
            self._peers[key] = endpoint
            self._keys[proc.rank] = key
            if proc.same_process(self.context.proc):
                self._self_peer = endpoint
        archs = self.archs
        if self._outgoing is not None or any(archs.foreign(key) for key in keys):
            self.raw_views = False  # typed data is converted from now on (see .hetero)
        if self.log.isEnabledFor(logging.INFO):
            self.log.info("%s", ", ".join(repr(self._peers[key]) for key in keys))

    def del_procs(self, procs: Sequence[Proc]) -> None:
        self.bml.del_procs(procs)
        for proc in procs:
            key = self._keys.pop(proc.rank, None)
            if key is not None:
                self._peers.pop(key, None)

    def add_comm(self, comm: Any) -> None:
        ctx = comm.context_id
        if ctx in self._comms:
            raise PmlError(
                f"context id {ctx} is already used by a live communicator; every communicator "
                "needs its own"
            )
        ranks = tuple(comm.remote_world_ranks)  # the peers: the remote group of an intercomm
        if len(comm.world_ranks) != comm.size or not 0 <= comm.rank < comm.size:
            raise PmlError(
                f"communicator {ctx}: rank {comm.rank}, size {comm.size} and "
                f"{len(comm.world_ranks)} world ranks do not agree"
            )
        missing = [rank for rank in ranks if rank not in self._peers]
        if missing:
            raise PmlError(
                f"communicator {ctx} contains world ranks {missing} that were never added to "
                "the PML (add_procs must come first)"
            )
        state = CommState(
            ctx,
            comm.rank,
            [self._peers[rank] for rank in ranks],
            self._matched,
            self._retain,
            cancel_send=self.cancel_send,
            keys=ranks,
            rings=[self._peer_ring(self._peers[rank]) for rank in ranks] if self.fast_path else (),
            immediate=[self._immediate(self._peers[rank]) for rank in ranks],
        )
        self._comms[ctx] = state
        comm.pml_state = state
        for module, tag, data in self._orphans.pop(ctx, ()):
            self._handlers[tag](module, tag, memoryview(data))

    @staticmethod
    def _peer_ring(peer: BmlEndpoint) -> PeerRing | None:
        """The ring a fast-path receive from ``peer`` polls: its only eager module's, if any."""
        btl = peer.eager_single
        return None if btl is None else btl.module.peer_ring(btl.endpoint)

    @staticmethod
    def _immediate(peer: BmlEndpoint) -> ImmediateSend | None:
        """The immediate send of an eager MATCH record to ``peer`` through its only eager
        module: the module's own, or the header packed and handed to ``sendi``; None when
        several modules share the peer's eager traffic (``send_view`` then starts a send)."""
        btl = peer.eager_single
        if btl is None:
            return None
        send = btl.module.immediate(btl.endpoint, MATCH.struct, TYPE_MATCH, btl.eager_limit)
        return send if send is not None else _packed_sendi(btl)

    def del_comm(self, comm: Any) -> None:
        state = self._comms.pop(comm.context_id, None)
        if state is None:
            raise PmlError(f"communicator {comm.context_id} is not known to the PML")
        comm.pml_state = None

    # -- requests ---------------------------------------------------------------------------

    def isend(self, spec: Any, dest: int, tag: int, comm: Any, mode: SendMode) -> SendRequest:
        if not self.raw_views and self._outgoing is not None and typed(spec):
            return self.isend_view(
                wire_stream(spec, self.archs, self._outgoing), dest, tag, comm, mode
            )
        convertor = spec.convertor
        if convertor is not None:
            return self.isend_view(convertor, dest, tag, comm, mode)
        data = spec.view
        if data.format != "B" or data.ndim != 1:
            data = data.cast("B")
        return self.isend_view(data, dest, tag, comm, mode)

    def send_view(self, data: memoryview, dest: int, tag: int, comm: Any) -> SendRequest | None:
        """Start a blocking standard send of the bytes ``data``: None if it already left.

        The API's ``Send`` hot path: a short message the eager module takes at once needs no
        request at all, so none is made; anything else is :meth:`isend_view`'s request, for
        the caller to wait on.  ``data`` is a flat byte view.
        """
        state = comm.pml_state
        if state is None or not 0 <= dest < state.size:
            raise self._bad_rank(comm, dest, "destination")
        send = state.immediate[dest]  # bound at add_comm: it checks the eager limit itself
        if send is not None:
            seqs = state.send_seq
            seq = seqs[dest]
            try:
                sent = send(data, TYPE_MATCH, 0, seq, state.ctx, state.rank, tag)
            except BtlError as error:
                raise self._unreachable(dest, state.endpoints[dest], error) from error
            if sent:
                seqs[dest] = (seq + 1) & _SEQ_MASK
                return None
        return self.isend_view(data, dest, tag, comm, _STANDARD)

    def isend_view(
        self, data: memoryview | Convertor, dest: int, tag: int, comm: Any, mode: SendMode
    ) -> SendRequest:
        """:meth:`isend` of a flat byte view (the API passes views, not buffer specs), or of
        the convertor of a non-contiguous layout: its packed stream, packed as it leaves.

        The protocols are the same for both: an eager message (a packed one is packed into
        the descriptor, :meth:`_eager_packed`), a rendezvous (a packed one packs its
        fragments at their positions, never RGET, which needs contiguous memory), or a long
        send to this process (:meth:`_send_to_self`).
        """
        state = comm.pml_state
        if state is None or not 0 <= dest < state.size:
            raise self._bad_rank(comm, dest, "destination")
        peer = state.endpoints[dest]
        seqs = state.send_seq  # the matching state's list: next_send_sequence(), inlined
        seq = seqs[dest]
        request = SendRequest(data, peer, state, seq)
        seqs[dest] = (seq + 1) & _SEQ_MASK
        btl = peer.eager_single or peer.next_eager()
        try:
            if mode is not _SYNCHRONOUS:
                if data.__class__ is memoryview:  # a view (told without a call): as short as before
                    if len(data) + _MATCH_SIZE <= btl.eager_limit:
                        header = _MATCH_PACK(TYPE_MATCH, 0, seq, state.ctx, state.rank, tag)
                        if btl.sendi(btl.endpoint, header, data, TYPE_MATCH) or self._send_buffer(
                            btl, header, data, TYPE_MATCH
                        ):
                            request.count = len(data)
                            request.complete = True  # finish(), inlined: nothing waits on it yet
                        else:
                            self._pending.append(
                                lambda: self._retry_eager(request, btl, header, data, TYPE_MATCH)
                            )
                        return request
                elif data.packed_size + _MATCH_SIZE <= btl.eager_limit:
                    return self._eager_packed(request, btl, seq, state, tag)
                if peer is self._self_peer:
                    return self._send_to_self(request, btl, seq, state, tag)
            return self._start_rndv(request, btl, seq, state, tag, synchronous=mode is _SYNCHRONOUS)
        except BtlError as error:
            self._sends.pop(request.id, None)
            self._deregister(request)
            raise self._unreachable(dest, peer, error) from error

    def _eager_packed(
        self, request: SendRequest, btl: Any, seq: int, state: CommState, tag: int
    ) -> SendRequest:
        """The eager send of a packed stream: packed straight into the descriptor."""
        convertor = request.data
        length = convertor.packed_size
        header = _MATCH_PACK(TYPE_MATCH, 0, seq, state.ctx, state.rank, tag)
        request.count = length
        descriptor = btl.alloc(btl.endpoint, _MATCH_SIZE + length)
        if descriptor is None:  # no descriptor now: pack once, send the copy when one is free
            packed = convertor.pack_all()
            retry = partial(self._retry_eager, request, btl, header, packed, TYPE_MATCH)
            self._pending.append(retry)
            return request
        segment = descriptor.segments[0]
        segment[:_MATCH_SIZE] = header
        convertor.pack(0, segment[_MATCH_SIZE:])
        btl.send(btl.endpoint, descriptor, TYPE_MATCH)
        request.complete = True
        return request

    @staticmethod
    def _unreachable(dest: int, peer: BmlEndpoint, error: BtlError) -> MPIException:
        return MPIException(
            ERR_OTHER, f"cannot send to rank {dest} (world rank {peer.proc.rank}): {error}"
        )

    def _send_to_self(
        self, request: SendRequest, btl: Any, seq: int, state: CommState, tag: int
    ) -> SendRequest:
        """A long standard send to this very process: complete now, deliver a copy later.

        The rendezvous would wait for a receive this process can only post after the send
        returns; a blocking send to oneself must not hang, so the data is copied and a private
        request carries the copy through the usual protocol, while the caller's completes.
        """
        data = request.data
        if type(data) is memoryview:
            copy = memoryview(bytearray(len(data)))
            copy[:] = data
        else:  # a convertor: its packed stream is the copy
            copy = data.pack_all()
        carrier = SendRequest(copy, request.peer)
        self._start_rndv(carrier, btl, seq, state, tag, synchronous=False)
        request.id = carrier.id  # what a cancel names the message by
        request.count = len(copy)
        request.complete = True
        return request

    def irecv(self, spec: Any, source: int, tag: int, comm: Any) -> Any:
        if not self.raw_views and typed(spec):  # staged as sent, converted, unpacked
            inner = self.irecv_view(None, source, tag, comm)
            return ConvertedRecv(inner, spec, comm.pml_state, self.archs)
        convertor = spec.convertor
        if convertor is not None:  # a non-contiguous layout: fragments unpack where they land
            return self.irecv_view(PackedTarget(convertor), source, tag, comm)
        view = spec.view
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        return self.irecv_view(view, source, tag, comm)

    def irecv_view(
        self, view: memoryview | PackedTarget | None, source: int, tag: int, comm: Any
    ) -> RecvRequest:
        """:meth:`irecv` into a flat writable byte view; None: a buffer sized by the message.

        With None the request's ``view`` becomes, at match time, a new buffer of exactly the
        message's length: how a pickled object (whose size only its sender knows) is received
        in one step, in its place in the matching order, without a probe.
        """
        state = comm.pml_state
        if state is None or (source != ANY_SOURCE and not 0 <= source < state.size):
            raise self._bad_rank(comm, source, "source")
        request = RecvRequest(view, state, source)
        message = state.matching.post(request, source, tag)
        if message is not None:
            self._matched(request, message)
        return request

    def iprobe(self, source: int, tag: int, comm: Any) -> ProbeStatus | None:
        """The status of a matching unexpected message, or None (progressing once first)."""
        message = self._probe(source, tag, comm, take=False)
        if message is None:
            return None
        return ProbeStatus(message.source, message.tag, message.msg_length)

    def improbe(self, source: int, tag: int, comm: Any) -> Message | None:
        """Take a matching message out of matching (for :meth:`imrecv`), or None."""
        return self._probe(source, tag, comm, take=True)

    def imrecv(self, spec: BufferSpec | None, message: PmlMessage) -> Any:
        """Receive a message ``improbe`` took; ``spec`` None: a buffer of the message's size."""
        if not isinstance(message, Message):
            raise TypeError(f"imrecv takes a message returned by improbe, got {message!r}")
        if message.consumed:
            raise MPIException(ERR_OTHER, f"{message!r} was already received")
        if message.ctx not in self._comms:
            raise MPIException(ERR_COMM, f"the communicator of {message!r} was freed")
        if spec is not None and not self.raw_views and typed(spec):
            return ConvertedRecv(
                self.imrecv(None, message), spec, self._comms[message.ctx], self.archs
            )
        message.consumed = True
        view: memoryview | PackedTarget | None = None
        if spec is not None:
            if spec.convertor is not None:
                view = PackedTarget(spec.convertor)
            else:
                view = spec.view
                if view.format != "B" or view.ndim != 1:
                    view = view.cast("B")
        request = RecvRequest(view, None, message.source)
        self._matched(request, message)
        return request

    def _probe(self, source: int, tag: int, comm: Any, *, take: bool) -> Message | None:
        """A matching unexpected message (taken out of matching if ``take``), looking again
        after one pass of progress if there is none yet; None if there is still none."""
        state = comm.pml_state
        if state is None or (source != ANY_SOURCE and not 0 <= source < state.size):
            raise self._bad_rank(comm, source, "source")
        find = state.matching.mprobe if take else state.matching.probe
        message = find(source, tag)
        if message is None:
            self.engine.progress()
            message = find(source, tag)
        return message

    # -- progress and errors ----------------------------------------------------------------

    def progress(self) -> int:
        """Retry work that found no free descriptor; the transports progress on their own."""
        pending = self._pending
        if not pending:
            return 0
        done = 0
        for _ in range(len(pending)):
            retry = pending.popleft()
            if retry():
                done += 1
            else:
                pending.appendleft(retry)
                break  # still no descriptor: keep the order, try again on the next pass
        return done

    def _btl_error(self, module: Any, endpoint: Any, error: BaseException) -> None:
        """A peer became unreachable: fail every request that waits for it."""
        self._errors.append(error)
        if endpoint is None:
            return
        proc = endpoint.proc
        self._forget_cancels(proc)
        for table in (self._sends, self._recvs):
            for key, request in list(table.items()):
                if request.peer is not None and request.peer.proc.same_process(proc):
                    del table[key]
                    if table is self._sends:
                        self._deregister(request)
                    request.fail(
                        ERR_OTHER,
                        MPIException(ERR_OTHER, f"{proc} became unreachable: {error}"),
                    )

    @classmethod
    def _bad_rank(cls, comm: Any, rank: int, role: str) -> MPIException:
        """Why ``rank`` cannot be the ``role`` (``"destination"``, ``"source"``) of a message
        on ``comm``: the communicator is not added (or freed), or the rank is out of range."""
        state = comm.pml_state
        if state is None:
            return cls._not_added(comm)
        either = "is not ANY_SOURCE and not" if role == "source" else "is not"
        return MPIException(ERR_RANK, f"{role} {rank} {either} in 0..{state.size - 1}")

    @staticmethod
    def _not_added(comm: Any) -> MPIException:
        return MPIException(
            ERR_COMM,
            f"communicator {getattr(comm, 'context_id', comm)!r} was not added to the PML "
            "(add_comm) or was already freed",
        )

    @staticmethod
    def _protocol_error(what: str) -> PmlError:
        return PmlError(f"ob1 protocol error: {what} (a peer runs another PML, or a bug)")

    # -- teardown ---------------------------------------------------------------------------

    @property
    def idle(self) -> bool:
        """No send owes data to a peer and no work waits for descriptors."""
        return not self._sends and not self._pending and not self._cancels

    def finalize(self) -> None:
        """Drain pending sends, then finalize the BML and the BTLs; once."""
        if self._finalized:
            return
        self._finalized = True
        drained = self.engine.wait_until(lambda: self.idle, timeout=self.finalize_timeout)
        stuck = len(self._sends) + len(self._pending)
        orphans = {ctx: len(kept) for ctx, kept in self._orphans.items()}
        self.engine.unregister(self.progress)
        try:
            self.selected_bml.close()
        finally:
            self._comms.clear()
            self._orphans.clear()
        problems = []
        if not drained:
            problems.append(
                f"{stuck} send(s) still owed data to their receivers after "
                f"{self.finalize_timeout:g} s (pml_ob1_finalize_timeout)"
            )
        if orphans:
            listed = ", ".join(f"{n} for context {ctx}" for ctx, n in sorted(orphans.items()))
            problems.append(
                f"messages arrived for communicators this process never created ({listed}) "
                "and were dropped"
            )
        if problems:
            raise MPIException(ERR_INTERN, "pml ob1 finalize: " + "; ".join(problems))
