"""A tcp BTL module: one listening socket on one interface, and a connection per reachable peer.

Connections are made lazily, on the first send to a peer.  When two processes connect to each
other at the same time, exactly one connection survives, by a rule both sides apply alike: the
connection opened by the lower rank wins.  The higher rank accepts the lower rank's connection
and abandons its own; the lower rank answers the higher rank's attempt with ``DUPLICATE``.

Each endpoint sends on exactly one connection, in order; frames queued before the connection is
up (or while the socket is full) leave in the order they were sent.

``get`` (see :mod:`.rdma`) sends a small GET frame through that same queue; the peer answers with
GET_REPLY frames that carry a view of its registered buffer, and the reply is read straight into
the destination.  A get long enough is striped over every tcp module (link) of this process that
reaches the peer, in shares weighted by their bandwidth.

**Strangers.**  Any local process can connect to the listening socket, so an accepted connection
is a *stranger* until it proves the job secret: it gets no receive buffer (that comes with
authentication), at most ``btl_tcp_max_unauthenticated`` strangers exist at a time (a new one
evicts the oldest), each must finish its handshake within ``btl_tcp_handshake_timeout`` seconds,
and refusals are reported as one aggregated warning now and then, never one line each.  When
``accept`` fails for lack of descriptors (``EMFILE``, ``ENFILE``) or memory, the listener is
paused (taken out of the poller, so the process does not spin on a socket that stays readable)
for a time that doubles up to :data:`MAX_PAUSE` while the condition lasts.

Finalize flushes every queued frame, completing handshakes still in progress first; frames that
still cannot be delivered within ``btl_tcp_finalize_timeout`` fail their descriptors and make
finalize raise an error that counts them.
"""

from __future__ import annotations

import errno
import select
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ompy.opal.mca.btl import (
    BtlError,
    BtlFlags,
    BtlModule,
    BtlPeerError,
    Descriptor,
    Endpoint,
    MemHandle,
    ModuleAttributes,
)
from ompy.opal.net.interfaces import Interface
from ompy.opal.net.reach import bind_device
from ompy.opal.proc import Proc
from ompy.opal.tally import Tally

from . import wire
from .connection import CLOSED, CONNECTING, OPEN, Connection, drop_sent
from .poller import READ, WRITE, Poller
from .rdma import Get, GetCompletion, GetPart, split

if TYPE_CHECKING:  # the component module imports this one
    from .component import TcpBtlComponent

_FRAME_PACK = wire.FRAME.pack
_FRAME_SIZE = wire.FRAME_SIZE
_DATA = wire.KIND_DATA
_GET_FRAME = wire.FRAME.pack(wire.GET_REQUEST.size, wire.KIND_GET, 0)
_GET_REQUEST_PACK = wire.GET_REQUEST.pack
_REPLY_HEADER_SIZE = _FRAME_SIZE + wire.GET_REPLY.size
#: ``accept`` errors that mean "out of descriptors or memory": pause the listener, do not spin.
_EXHAUSTED = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
#: The first pause of a listener after such an error, and the longest (seconds).
FIRST_PAUSE = 0.05
MAX_PAUSE = 1.0
#: Connections accepted per readiness event at most, so a flood cannot monopolize progress.
ACCEPT_BATCH = 64
#: New attempts of an outgoing connection whose peer hung up during the handshake (its
#: deadline passed while this process computed, or a flood evicted it) before giving up.
HANDSHAKE_RETRIES = 3


class TcpEndpoint(Endpoint):
    """A peer as one tcp module sees it: where to connect, the connection, the send queue."""

    __slots__ = (
        "address",
        "closed",
        "conn",
        "error",
        "gets",
        "pending",
        "queue",
        "retries",
        "waiting",
    )

    def __init__(self, module: TcpBtlModule, proc: Proc, address: tuple[str, int]) -> None:
        super().__init__(module, proc)
        self.address = address
        self.conn: Connection | None = None
        self.pending: Connection | None = None  # our outgoing attempt, still in its handshake
        self.waiting = False  # the peer refused our attempt: its own connection is coming
        self.queue: deque = deque()
        self.error: BaseException | None = None
        self.closed = False  # the peer finalized
        self.gets: dict[int, GetPart] = {}  # our gets from this peer, by get id
        self.retries = 0  # new attempts after the peer hung up during the handshake


class TcpBtlModule(BtlModule[TcpEndpoint]):
    """Fragments over TCP through one interface."""

    flags = BtlFlags.SEND | BtlFlags.SENDI | BtlFlags.GET
    component: TcpBtlComponent

    def __init__(
        self,
        component: TcpBtlComponent,
        attributes: ModuleAttributes,
        *,
        interface: Interface,
        link: int,
        kind_index: int,
        me: Proc,
        secret: bytes,
        poller: Poller,
        cards: Callable[[int], list[wire.ContactAddress] | None],
        sndbuf: int = 0,
        rcvbuf: int = 0,
        get_stripe_min: int = 1 << 20,
        free_list_max: int | None = None,
        finalize_timeout: float = 5.0,
        handshake_timeout: float = 10.0,
        max_unauthenticated: int = 64,
        refusals: Tally | None = None,
    ) -> None:
        super().__init__(component, f"tcp:{interface.name}:{link}", attributes)
        self.interface = interface
        self.link = link
        self.kind_index = kind_index
        self.me = me
        self.secret = secret
        self.poller = poller
        self.cards = cards
        self.sndbuf = sndbuf
        self.rcvbuf = rcvbuf
        self.finalize_timeout = finalize_timeout
        self.get_stripe_min = get_stripe_min
        self._get_ids = 0
        self.rejected = 0  # incoming connections that failed the handshake (strangers)
        self.handshake_timeout = handshake_timeout
        self.max_unauthenticated = max_unauthenticated
        #: Accepted connections that have not proved the secret yet, oldest first.
        self.strangers: dict[Connection, None] = {}
        self.refusals = (
            refusals
            if refusals is not None
            else Tally(component.log, f"tcp {self.name}: refused connections")
        )
        self._pause = 0.0  # the current pause of the listener after EMFILE (0: not paused)
        self._resume_at: float | None = None
        # Bytes read from this module's sockets (frames and their headers), counted per read
        # call rather than per frame: reported at finalize under btl_base_verbose >= 20, so a
        # run can show which links carried a striped message.
        self.bytes_received = 0
        self.receive_buffer = max(256 * 1024, 2 * (self.eager_limit + _FRAME_SIZE))
        self.setup_free_lists(initial=8, maximum=free_list_max)
        self.endpoints: dict[int, TcpEndpoint] = {}
        self.unclaimed: dict[int, Connection] = {}  # accepted before add_procs named the peer
        #: Why a peer on another node got no endpoint (its addresses did not answer), by rank.
        self._unanswered: dict[int, str] = {}
        self.connections: set[Connection] = set()
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind((interface.address, 0))
        self.listener.listen(128)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        poller.add(self.listener.fileno(), READ, self._on_accept, idle=True)

    @property
    def contact(self) -> wire.ContactAddress:
        i = self.interface
        return wire.ContactAddress(
            i.name, i.address, i.prefixlen, self.port, i.loopback, self.component.stack
        )

    # -- peers ------------------------------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc]) -> list[TcpEndpoint | None]:
        self.component.probe_peers(procs)  # every module's probes at once; cached afterwards
        endpoints: list[TcpEndpoint | None] = []
        for proc in procs:
            address = None if proc.same_process(self.me) else self._address_of(proc)
            if address is None:
                endpoints.append(None)
                continue
            endpoint = self.endpoints.get(proc.rank)
            if endpoint is None:
                endpoint = TcpEndpoint(self, proc, address)
                self.endpoints[proc.rank] = endpoint
                adopted = self.unclaimed.pop(proc.rank, None)
                if adopted is not None:
                    adopted.endpoint = endpoint
                    endpoint.conn = adopted
            endpoints.append(endpoint)
        return endpoints

    def candidates(self, proc: Proc) -> list[wire.ContactAddress]:
        """The peer's addresses this module may pair with, before any probe, best first.

        Loopback modules pair with loopback addresses of peers on this node; the others with
        the peer's addresses in this interface's subnet if it has any, else with all its
        non-loopback addresses (a routed network).
        """
        card = self.cards(proc.rank)
        if card is None:
            return []
        mine = self.interface
        if mine.loopback:
            return [a for a in card if a.loopback] if proc.same_node(self.me) else []
        others = [a for a in card if not a.loopback]
        return [a for a in others if mine.ip in a.network] or others

    def _address_of(self, proc: Proc) -> tuple[str, int] | None:
        """The peer address this module pairs with, or None when it cannot reach the peer.

        For a peer on another node, only addresses the probes found reachable count (see
        :mod:`.reach`); a same-subnet address that does not answer gives way to a routed one.
        """
        self._unanswered.pop(proc.rank, None)
        card = self.cards(proc.rank)
        if card is None:
            return None
        candidates = self.candidates(proc)
        reach = self.component.reach
        if candidates and reach is not None and not self.component.shares_stack(proc, card):
            mine = self.interface.address
            verdicts = [(a, reach.verdict(mine, a.address)) for a in candidates]
            usable = [a for a, verdict in verdicts if verdict is not None and verdict.reachable]
            if not usable and len(candidates) < sum(not a.loopback for a in card):
                # Nothing in this subnet answered: try the peer's routed addresses as well.
                wider = [a for a in card if not a.loopback and a not in candidates]
                self.component.probe_addresses(self.interface, wider)
                verdicts += [(a, reach.verdict(mine, a.address)) for a in wider]
                usable = [a for a, v in verdicts if v is not None and v.reachable]
            if not usable:
                self._unanswered[proc.rank] = ", ".join(
                    f"{a.address}:{a.port} ({v.reason if v is not None else 'not probed'})"
                    for a, v in verdicts
                )
                return None
            candidates = usable
        if not candidates:
            return None
        chosen = candidates[self.kind_index % len(candidates)]
        return (chosen.address, chosen.port)

    def unreachable_reason(self, proc: Proc) -> str:
        reason = self._unanswered.get(proc.rank)
        if reason is None:
            return ""
        return f"no address of rank {proc.rank} answered from {self.interface}: {reason}"

    def del_procs(self, procs: Sequence[Proc], endpoints: Sequence[TcpEndpoint | None]) -> None:
        for endpoint in endpoints:
            if not isinstance(endpoint, TcpEndpoint) or endpoint.module is not self:
                continue
            self.endpoints.pop(endpoint.proc.rank, None)
            if endpoint.gets:
                self.fail_gets(
                    endpoint,
                    BtlPeerError(
                        f"tcp {self.name}: rank {endpoint.proc.rank} was removed (del_procs) "
                        "while gets from it were in flight"
                    ),
                )
            for conn in (endpoint.conn, endpoint.pending):
                if conn is not None:
                    conn.say_goodbye()
                    conn.drain_until_eof(time.monotonic() + self.finalize_timeout)
                    self.connections.discard(conn)
            endpoint.conn = endpoint.pending = None
            endpoint.closed = True

    # -- sending ----------------------------------------------------------------------------

    def send(self, endpoint: TcpEndpoint, descriptor: Descriptor, tag: int) -> bool:
        segments = descriptor.segments
        if len(segments) == 1:
            segment = segments[0]
            length = len(segment)
            buffers = [_FRAME_PACK(length, _DATA, tag), segment]
        else:
            length = sum(len(segment) for segment in segments)
            buffers = [_FRAME_PACK(length, _DATA, tag), *segments]
        if self._transmit(endpoint, buffers, length + _FRAME_SIZE, descriptor):
            return self.sent_at_once(endpoint, descriptor)
        return False

    def sendi(
        self, endpoint: TcpEndpoint, header: bytes | memoryview, payload: memoryview, tag: int
    ) -> bool:
        conn = endpoint.conn
        if conn is None or endpoint.queue:
            return False
        length = len(header) + len(payload)
        if length > self.max_send_size:
            return False
        frame = _FRAME_PACK(length, _DATA, tag)
        try:
            sent = conn.sock.sendmsg([frame, header, payload])
        except BlockingIOError:
            return False
        except OSError as error:
            conn.lost(f"sending to rank {endpoint.proc.rank} failed: {error}")
            raise self._unreachable(endpoint) from error
        if sent != length + _FRAME_SIZE:
            if not sent:
                return False
            # Part of the frame is on the wire: the rest must follow, so keep a copy of the rest
            # (only of the rest: the caller may reuse its memory once sendi returned True).
            buffers = [frame, header, payload]
            drop_sent(buffers, sent)
            endpoint.queue.append([[bytes(buffer) for buffer in buffers], None])
            conn.want_write()
        return True

    def completed(self, endpoint: TcpEndpoint, descriptor: Descriptor | None) -> None:
        """A queued entry left completely: run the callback, return an owned descriptor."""
        if descriptor is not None:
            self.send_finished(endpoint, descriptor)

    def _unreachable(self, endpoint: TcpEndpoint) -> BtlPeerError:
        if endpoint.error is not None:
            return BtlPeerError(f"{endpoint.error}")
        if endpoint.closed:
            return BtlPeerError(
                f"tcp {self.name}: rank {endpoint.proc.rank} has finalized; nothing more can be "
                "sent to it"
            )
        return BtlPeerError(f"tcp {self.name}: rank {endpoint.proc.rank} is unreachable")

    def post(self, endpoint: TcpEndpoint, buffers: list) -> None:
        """Send a frame that has no descriptor (get traffic) in order with everything else.

        ``buffers`` are sent without a copy, so they must stay unchanged until they left.
        """
        self._transmit(endpoint, buffers, sum(len(buffer) for buffer in buffers), None)

    def _transmit(
        self, endpoint: TcpEndpoint, buffers: list, nbytes: int, descriptor: Descriptor | None
    ) -> bool:
        """Send a frame's ``buffers`` (``nbytes`` in all) now, or queue what the socket left.

        True when all of it is on its way; otherwise the queue holds the rest (with
        ``descriptor``, completed once it leaves) and the connection is asked to drain it, or
        to be made first.
        """
        conn = endpoint.conn
        queue = endpoint.queue
        if conn is not None and not queue:
            try:
                sent = conn.sock.sendmsg(buffers)
            except BlockingIOError:
                sent = 0
            except OSError as error:
                conn.lost(f"sending to rank {endpoint.proc.rank} failed: {error}")
                raise self._unreachable(endpoint) from error
            if sent == nbytes:
                return True
            drop_sent(buffers, sent)
            queue.append([buffers, descriptor])
            conn.want_write()
            return False
        if endpoint.error is not None or endpoint.closed:
            raise self._unreachable(endpoint)
        queue.append([buffers, descriptor])
        if conn is None:
            self._connect(endpoint)
        return False

    # -- RDMA get ---------------------------------------------------------------------------

    def register_mem(self, buffer: memoryview) -> MemHandle:
        """Offer ``buffer`` to the peers' gets (every tcp module of this process serves it)."""
        return self.component.registrations.register(buffer)

    def deregister_mem(self, handle: MemHandle) -> None:
        self.component.registrations.deregister(handle)

    def get(
        self,
        endpoint: TcpEndpoint,
        local: memoryview,
        remote: MemHandle,
        offset: int,
        completion: GetCompletion | None = None,
    ) -> None:
        """Read ``len(local)`` bytes at ``offset`` of the peer's region into ``local``.

        Returns at once; ``completion(error)`` runs from progress once the data is in place, or
        with a :class:`BtlPeerError` when the peer cannot answer (gone, or the key is invalid).
        ``local`` must stay alive and untouched until then.
        """
        view = memoryview(local)
        if view.readonly:
            raise BtlError(f"tcp {self.name}: the destination of a get must be writable")
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        length = len(view)
        if offset < 0 or offset + length > remote.length:
            raise BtlError(
                f"tcp {self.name}: a get of {length} bytes at offset {offset} does not fit the "
                f"peer's {remote.length}-byte region (key {remote.key})"
            )
        if endpoint.error is not None or endpoint.closed:
            raise self._unreachable(endpoint)
        if not length:
            if completion is not None:
                completion(None)
            return
        links = self._links_to(endpoint)
        shares = split(length, [m.bandwidth for m, _ in links], self.get_stripe_min)
        whole = Get(len(shares), completion)
        for (module, link_endpoint), (start, size) in zip(links, shares, strict=False):
            module._request(
                link_endpoint, view[start : start + size], remote.key, offset + start, whole
            )

    def _links_to(self, endpoint: TcpEndpoint) -> list[tuple[TcpBtlModule, TcpEndpoint]]:
        """This module's endpoint first, then the other modules' usable endpoints to the peer."""
        links = [(self, endpoint)]
        rank = endpoint.proc.rank
        for module in self.component.modules:
            if module is self:
                continue
            other = module.endpoints.get(rank)
            if other is not None and other.error is None and not other.closed:
                links.append((module, other))
        return links

    def _request(
        self, endpoint: TcpEndpoint, view: memoryview, key: int, offset: int, whole: Get
    ) -> None:
        self._get_ids += 1
        get_id = self._get_ids
        endpoint.gets[get_id] = GetPart(get_id, view, whole)
        request = _GET_FRAME + _GET_REQUEST_PACK(get_id, key, offset, len(view))
        try:
            self.post(endpoint, [request])
        except BtlPeerError as error:
            del endpoint.gets[get_id]
            whole.part_done(error)

    def serve_get(
        self, endpoint: TcpEndpoint, get_id: int, key: int, offset: int, length: int
    ) -> None:
        """A peer asked for part of a registered region: answer from the buffer itself."""
        try:
            region = self.component.registrations.region(key, offset, length)
        except BtlError as error:
            message = f"rank {self.me.rank}: {error}".encode()
            header = wire.FRAME.pack(wire.GET_ERROR.size + len(message), wire.KIND_GET_ERROR, 0)
            self.post(endpoint, [header + wire.GET_ERROR.pack(get_id) + message])
            return
        chunk = wire.REPLY_CHUNK
        for position in range(0, length or 1, chunk):  # an empty get: one empty reply
            piece = region[position : position + chunk]
            header = _FRAME_PACK(wire.GET_REPLY.size + len(piece), wire.KIND_GET_REPLY, 0)
            self.post(endpoint, [header + wire.GET_REPLY.pack(get_id, position), piece])

    def fail_gets(self, endpoint: TcpEndpoint, error: BaseException) -> None:
        """Every get in flight from this peer fails with ``error``, none is left waiting."""
        parts = list(endpoint.gets.values())
        endpoint.gets.clear()
        raised: BaseException | None = None
        for part in parts:
            try:
                part.get.part_done(error)
            except Exception as failure:  # an upper layer's callback: run the others first
                raised = raised or failure
        if raised is not None:
            raise raised

    # -- connections ------------------------------------------------------------------------

    def _new_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._tune(sock)
        return sock

    def _tune(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.sndbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.sndbuf)
        if self.rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self.rcvbuf)

    def _connect(self, endpoint: TcpEndpoint) -> None:
        if endpoint.pending is not None or endpoint.waiting or endpoint.conn is not None:
            return
        sock = self._new_socket()
        if not self.interface.loopback and not endpoint.proc.same_node(self.me):
            # As the probe did: this module's traffic leaves through its own interface.
            bind_device(sock, self.interface.name)
        conn = Connection(self, sock, endpoint=endpoint, receive_buffer=self.receive_buffer)
        endpoint.pending = conn
        self.connections.add(conn)
        try:
            conn.connect(endpoint.address)
        except OSError as error:
            conn.fail(f"cannot connect to {endpoint.address[0]}:{endpoint.address[1]}: {error}")

    def _on_accept(self, _mask: int) -> int:
        accepted = 0
        while accepted < ACCEPT_BATCH:
            try:
                sock, _address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return accepted
            except OSError as error:
                if error.errno in _EXHAUSTED:
                    self._pause_listener(error)
                return accepted  # otherwise the listener closed under us (finalize)
            self._pause = 0.0
            if len(self.strangers) >= self.max_unauthenticated:
                oldest = next(iter(self.strangers))
                self._refuse(oldest, "evicted: too many unauthenticated connections")
            self._tune(sock)
            conn = Connection(self, sock, receive_buffer=self.receive_buffer)
            conn.deadline = time.monotonic() + self.handshake_timeout
            self.strangers[conn] = None
            self.connections.add(conn)
            conn.accepted()
            self.poller.sweep_by(conn.deadline)
            accepted += 1
        return accepted

    def _refuse(self, conn: Connection, reason: str) -> None:
        """Close a stranger without its handshake (counted in the aggregated warning)."""
        self.connections.discard(conn)
        conn.close()
        self.rejected += 1
        self.refusals.note(reason)

    def _pause_listener(self, error: OSError) -> None:
        """Out of descriptors: stop polling the listener for a while instead of spinning."""
        self._pause = min(MAX_PAUSE, self._pause * 2) if self._pause else FIRST_PAUSE
        self._resume_at = time.monotonic() + self._pause
        self.poller.remove(self.listener.fileno())
        self.poller.sweep_by(self._resume_at)
        self.refusals.note(f"accept failed ({error.strerror}): listener paused")

    def sweep(self, now: float) -> int:
        """Close strangers past their deadline, resume a paused listener; what it did."""
        done = 0
        for conn in [c for c in self.strangers if c.deadline <= now]:
            self._refuse(conn, f"no handshake within {self.handshake_timeout:g} s")
            done += 1
        if self._resume_at is not None:
            if now >= self._resume_at:
                self._resume_at = None
                self.poller.add(self.listener.fileno(), READ, self._on_accept, idle=True)
                done += 1
            else:
                self.poller.sweep_by(self._resume_at)
        if self.strangers:
            self.poller.sweep_by(min(c.deadline for c in self.strangers))
        return done

    def incoming_verified(self, conn: Connection) -> bool:
        """An incoming connection proved the secret: keep it (True) or refuse it as duplicate."""
        rank = conn.peer_rank
        endpoint = self.endpoints.get(rank)
        if endpoint is None:
            if rank in self.unclaimed:
                return False
            self.unclaimed[rank] = conn
            return True
        if endpoint.conn is not None:
            return False
        pending = endpoint.pending
        if pending is not None:
            if self.me.rank < rank:
                return False  # our own connection wins
            endpoint.pending = None  # theirs wins: abandon ours
            self.connections.discard(pending)
            pending.close()
        conn.endpoint = endpoint
        endpoint.conn = conn
        endpoint.waiting = False
        return True  # the connection flushes the queue once its verdict is on the wire

    def outgoing_accepted(self, conn: Connection) -> None:
        endpoint = conn.endpoint
        endpoint.pending = None
        endpoint.retries = 0
        if endpoint.conn is None:
            endpoint.conn = conn
            endpoint.waiting = False
            conn.flush()
        else:
            self.connections.discard(conn)
            conn.close()

    def outgoing_refused(self, conn: Connection) -> None:
        endpoint = conn.endpoint
        self.connections.discard(conn)
        endpoint.pending = None
        if endpoint.conn is None:
            endpoint.waiting = True

    def connection_failed(
        self, conn: Connection, error: BtlPeerError, refused: str = "", retry: bool = False
    ) -> None:
        """A handshake failed: an outgoing one makes the peer unreachable (after up to
        :data:`HANDSHAKE_RETRIES` new attempts when the peer hung up); incoming is dropped."""
        self.connections.discard(conn)
        endpoint = conn.endpoint
        if conn.outgoing and endpoint is not None and endpoint.pending is conn:
            endpoint.pending = None
            if retry and endpoint.retries < HANDSHAKE_RETRIES:
                endpoint.retries += 1
                if self.component.verbose:
                    self.component.log.debug("%s; connecting again", error)
                self._connect(endpoint)
                return
            self._fail_endpoint(endpoint, error)
        else:
            self.rejected += 1
            if refused:  # a wrong proof or a malformed message: worth a (rate-limited) warning
                self.refusals.note(refused)
            if self.component.verbose:
                self.component.log.debug("%s: refused an incoming connection: %s", self.name, error)

    def connection_lost(self, conn: Connection, error: BtlPeerError) -> None:
        self.connections.discard(conn)
        endpoint = conn.endpoint
        if endpoint is None:
            self.unclaimed.pop(conn.peer_rank, None)
            endpoint = self.endpoints.get(conn.peer_rank)
        if endpoint is not None and endpoint.conn is conn:
            endpoint.conn = None
            self._fail_endpoint(endpoint, error)
        else:
            self.report_error(endpoint, error)

    def connection_closed(self, conn: Connection) -> None:
        """The peer said BYE and closed: an orderly end, not an error."""
        self.connections.discard(conn)
        endpoint = conn.endpoint
        if endpoint is None:
            self.unclaimed.pop(conn.peer_rank, None)
        elif endpoint.conn is conn:
            endpoint.conn = None
            endpoint.closed = True
            if endpoint.gets:
                self.fail_gets(
                    endpoint,
                    BtlPeerError(
                        f"tcp {self.name}: rank {endpoint.proc.rank} finalized before answering "
                        f"{len(endpoint.gets)} get(s) from it"
                    ),
                )

    def _fail_endpoint(self, endpoint: TcpEndpoint, error: BtlPeerError) -> None:
        endpoint.error = error
        self._fail_queue(endpoint, error)
        try:
            self.fail_gets(endpoint, error)
        finally:
            self.report_error(endpoint, error)

    def _fail_queue(self, endpoint: TcpEndpoint, error: BtlPeerError) -> int:
        """Fail every queued descriptor; the number of frames that were queued."""
        queued = list(endpoint.queue)
        endpoint.queue.clear()
        for _buffers, descriptor in queued:
            if descriptor is not None:
                self.send_finished(endpoint, descriptor, error)
        return len(queued)

    # -- teardown ---------------------------------------------------------------------------

    def finalize(self) -> None:
        """Deliver what is queued, say BYE on every connection, wait (bounded) for the peers' BYE.

        Frames queued to a peer whose connection is still in its handshake are not dropped: the
        handshake is completed first.  What still cannot be delivered within the finalize
        timeout fails its descriptors, and finalize raises a :class:`BtlPeerError` that counts it.
        """
        deadline = time.monotonic() + self.finalize_timeout
        self._finish_handshakes(deadline)
        self.poller.remove(self.listener.fileno())
        self.listener.close()
        undelivered = []
        for endpoint in self.endpoints.values():
            if endpoint.queue and endpoint.conn is None:
                error = self._undeliverable(endpoint)
                frames = self._fail_queue(endpoint, error)
                undelivered.append(f"{frames} frame(s) to rank {endpoint.proc.rank}")
            if endpoint.gets:
                self.fail_gets(
                    endpoint,
                    BtlPeerError(
                        f"tcp {self.name}: finalized while {len(endpoint.gets)} get(s) from rank "
                        f"{endpoint.proc.rank} were in flight"
                    ),
                )
        connections = list(self.connections)
        self.connections.clear()
        for conn in connections:
            conn.say_goodbye()
        deadline = time.monotonic() + self.finalize_timeout
        for conn in connections:
            conn.drain_until_eof(deadline)
        self.endpoints.clear()
        self.unclaimed.clear()
        self.strangers.clear()
        self._resume_at = None
        self.refusals.flush()
        if self.component.verbose:
            self.component.log.debug("%s: received %d bytes", self.name, self.bytes_received)
        if undelivered:
            raise BtlPeerError(
                f"tcp {self.name}: finalize could not deliver {', '.join(undelivered)}: no "
                f"connection was established within btl_tcp_finalize_timeout = "
                f"{self.finalize_timeout} s"
            )

    def _undeliverable(self, endpoint: TcpEndpoint) -> BtlPeerError:
        state = endpoint.error or (
            "its connection was still in its handshake"
            if endpoint.pending is not None or endpoint.waiting
            else "no connection to it was open"
        )
        return BtlPeerError(
            f"tcp {self.name}: finalize could not deliver {len(endpoint.queue)} frame(s) to rank "
            f"{endpoint.proc.rank}: {state}"
        )

    def _stalled(self) -> list[TcpEndpoint]:
        """Endpoints with frames queued but no open connection to send them on."""
        return [
            endpoint
            for endpoint in self.endpoints.values()
            if endpoint.queue
            and endpoint.conn is None
            and endpoint.error is None
            and not endpoint.closed
        ]

    def _finish_handshakes(self, deadline: float) -> None:
        """Drive this module's handshakes (and only them) until no queued frame lacks a connection.

        Only the listener and connections still in their handshake are polled, so no frame is
        delivered to the upper layers while the module is going away.
        """
        handlers = self.poller.handlers
        while stalled := self._stalled():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for endpoint in stalled:
                self._connect(endpoint)
            watch = select.poll()
            watch.register(self.listener.fileno(), READ)
            for conn in self.connections:
                if conn.state == CONNECTING:
                    watch.register(conn.fd, WRITE)
                elif conn.state not in (OPEN, CLOSED):
                    watch.register(conn.fd, READ)
            for fd, mask in watch.poll(min(left, 0.1) * 1000):
                handler = handlers.get(fd)
                if handler is not None:
                    handler(mask)
