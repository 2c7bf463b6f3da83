"""A tcp BTL module: one listening socket on one interface, and a connection per reachable peer.

Connections are made lazily, on the first send to a peer.  When two processes connect to each
other at the same time, exactly one connection survives, by a rule both sides apply alike: the
connection opened by the lower rank wins.  The higher rank accepts the lower rank's connection
and abandons its own; the lower rank answers the higher rank's attempt with ``DUPLICATE``.

Each endpoint sends on exactly one connection, in order; frames queued before the connection is
up (or while the socket is full) leave in the order they were sent.
"""

from __future__ import annotations

import socket
import time
from collections import deque
from collections.abc import Sequence

from ompy.opal.mca.btl import (
    BtlFlags,
    BtlModule,
    BtlPeerError,
    Descriptor,
    DescriptorFlags,
    Endpoint,
    ModuleAttributes,
)
from ompy.opal.proc import Proc

from . import wire
from .connection import Connection
from .interfaces import Interface
from .poller import READ, Poller

_FRAME_PACK = wire.FRAME.pack
_FRAME_SIZE = wire.FRAME_SIZE
_DATA = wire.KIND_DATA
_OWNERSHIP = DescriptorFlags.OWNERSHIP
_ALWAYS_CALLBACK = DescriptorFlags.ALWAYS_CALLBACK


class TcpEndpoint(Endpoint):
    """A peer as one tcp module sees it: where to connect, the connection, the send queue."""

    __slots__ = ("address", "closed", "conn", "error", "pending", "queue", "waiting")

    def __init__(self, module: TcpModule, proc: Proc, address: tuple[str, int]) -> None:
        super().__init__(module, proc)
        self.address = address
        self.conn: Connection | None = None
        self.pending: Connection | None = None  # our outgoing attempt, still in its handshake
        self.waiting = False  # the peer refused our attempt: its own connection is coming
        self.queue: deque = deque()
        self.error: BaseException | None = None
        self.closed = False  # the peer finalized


class TcpModule(BtlModule):
    """Fragments over TCP through one interface."""

    flags = BtlFlags.SEND | BtlFlags.SENDI

    def __init__(
        self,
        component,
        attributes: ModuleAttributes,
        *,
        interface: Interface,
        link: int,
        kind_index: int,
        me: Proc,
        secret: bytes,
        poller: Poller,
        cards,
        sndbuf: int = 0,
        rcvbuf: int = 0,
        free_list_max: int | None = None,
        finalize_timeout: float = 5.0,
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
        self.rejected = 0  # incoming connections that failed the handshake (strangers)
        # Bytes read from this module's sockets (frames and their headers), counted per read
        # call rather than per frame: reported at finalize under btl_base_verbose >= 20, so a
        # run can show which links carried a striped message.
        self.bytes_received = 0
        self.receive_buffer = max(256 * 1024, 2 * (self.eager_limit + _FRAME_SIZE))
        self.setup_free_lists(initial=8, maximum=free_list_max)
        self.endpoints: dict[int, TcpEndpoint] = {}
        self.unclaimed: dict[int, Connection] = {}  # accepted before add_procs named the peer
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
        return wire.ContactAddress(i.name, i.address, i.prefixlen, self.port, i.loopback)

    # -- peers ------------------------------------------------------------------------------

    def add_procs(self, procs: Sequence[Proc]) -> list[Endpoint | None]:
        endpoints: list[Endpoint | None] = []
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

    def _address_of(self, proc: Proc) -> tuple[str, int] | None:
        """The peer address this module pairs with, or None when it cannot reach the peer."""
        card = self.cards(proc.rank)
        if card is None:
            return None
        mine = self.interface
        if mine.loopback:
            if not proc.same_node(self.me):
                return None
            candidates = [a for a in card if a.loopback]
        else:
            others = [a for a in card if not a.loopback]
            same_subnet = [a for a in others if mine.ip in a.network]
            candidates = same_subnet or others
        if not candidates:
            return None
        chosen = candidates[self.kind_index % len(candidates)]
        return (chosen.address, chosen.port)

    def del_procs(self, procs: Sequence[Proc], endpoints: Sequence[Endpoint | None]) -> None:
        for endpoint in endpoints:
            if not isinstance(endpoint, TcpEndpoint) or endpoint.module is not self:
                continue
            self.endpoints.pop(endpoint.proc.rank, None)
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
            if sent == length + _FRAME_SIZE:
                flags = descriptor.flags
                if flags & _ALWAYS_CALLBACK and descriptor.completion is not None:
                    descriptor.completion(self, endpoint, descriptor, None)
                if flags & _OWNERSHIP:
                    self.free(descriptor)
                return True
            _skip(buffers, sent)
            queue.append([buffers, descriptor])
            conn.want_write()
            return False
        if endpoint.error is not None or endpoint.closed:
            raise self._unreachable(endpoint)
        queue.append([buffers, descriptor])
        if conn is None:
            self._connect(endpoint)
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
            # Part of the frame is on the wire: the rest must follow, so keep a copy of it.
            rest = b"".join((frame, header, payload))[sent:]
            endpoint.queue.append([[rest], None])
            conn.want_write()
        return True

    def completed(self, endpoint: TcpEndpoint, descriptor: Descriptor | None) -> None:
        """A queued entry left completely: run the callback, return an owned descriptor."""
        if descriptor is None:
            return
        if descriptor.completion is not None:
            descriptor.completion(self, endpoint, descriptor, None)
        if descriptor.flags & _OWNERSHIP:
            self.free(descriptor)

    def _unreachable(self, endpoint: TcpEndpoint) -> BtlPeerError:
        if endpoint.error is not None:
            return BtlPeerError(f"{endpoint.error}")
        if endpoint.closed:
            return BtlPeerError(
                f"tcp {self.name}: rank {endpoint.proc.rank} has finalized; nothing more can be "
                "sent to it"
            )
        return BtlPeerError(f"tcp {self.name}: rank {endpoint.proc.rank} is unreachable")

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
        conn = Connection(self, sock, endpoint=endpoint, receive_buffer=self.receive_buffer)
        endpoint.pending = conn
        self.connections.add(conn)
        try:
            conn.connect(endpoint.address)
        except OSError as error:
            conn.fail(f"cannot connect to {endpoint.address[0]}:{endpoint.address[1]}: {error}")

    def _on_accept(self, _mask: int) -> int:
        accepted = 0
        while True:
            try:
                sock, _address = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return accepted
            except OSError:
                return accepted  # the listener closed under us (finalize)
            self._tune(sock)
            conn = Connection(self, sock, receive_buffer=self.receive_buffer)
            self.connections.add(conn)
            conn.accepted()
            accepted += 1

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

    def connection_failed(self, conn: Connection, error: BtlPeerError) -> None:
        """A handshake failed: an outgoing one makes the peer unreachable; incoming is dropped."""
        self.connections.discard(conn)
        endpoint = conn.endpoint
        if conn.outgoing and endpoint is not None and endpoint.pending is conn:
            endpoint.pending = None
            self._fail_endpoint(endpoint, error)
        else:
            self.rejected += 1
            if self.component.verbose:
                self.component.say(f"{self.name}: refused an incoming connection: {error}")

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

    def _fail_endpoint(self, endpoint: TcpEndpoint, error: BtlPeerError) -> None:
        endpoint.error = error
        queued = list(endpoint.queue)
        endpoint.queue.clear()
        for _buffers, descriptor in queued:
            if descriptor is not None and descriptor.completion is not None:
                descriptor.completion(self, endpoint, descriptor, error)
            if descriptor is not None and descriptor.flags & _OWNERSHIP:
                self.free(descriptor)
        self.report_error(endpoint, error)

    # -- teardown ---------------------------------------------------------------------------

    def finalize(self) -> None:
        """Say BYE on every connection, wait (bounded) for the peers' BYE, close everything."""
        self.poller.remove(self.listener.fileno())
        self.listener.close()
        connections = list(self.connections)
        self.connections.clear()
        for conn in connections:
            conn.say_goodbye()
        deadline = time.monotonic() + self.finalize_timeout
        for conn in connections:
            conn.drain_until_eof(deadline)
        self.endpoints.clear()
        self.unclaimed.clear()
        if self.component.verbose:
            self.component.say(f"{self.name}: received {self.bytes_received} bytes")


def _skip(buffers: list, count: int) -> None:
    """Drop the first ``count`` bytes of a buffer list (after a partial write)."""
    while count:
        size = len(buffers[0])
        if count >= size:
            count -= size
            del buffers[0]
        else:
            buffers[0] = memoryview(buffers[0])[count:]
            count = 0
