"""A node daemon's relay of its ranks' control connections, aggregating their fences.

The daemon's ranks connect to the relay (on loopback) instead of the launcher's control
server.  The relay runs the same handshake (challenge, the rank's proof of the job secret), so
a rank cannot tell the difference; then it attaches the rank to the launcher over the daemon's
single control connection and relays every message both ways, except fences: the relay holds
its ranks' ``fence`` requests until every rank of the node has entered, sends them as one
``fence_node``, and answers them all when one ``fenced`` comes back.  Should a local rank go
away (its connection ends, it aborts or leaves), the remaining fences are relayed one by one,
so the launcher sees exactly what it would see with direct connections.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable
from typing import Any

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.orte.control import auth, wire
from ompy.orte.control import protocol as control

from .protocol import keep_alive

_READ_SIZE = 1 << 16
#: Messages after which a rank takes part in no further fence.
_LEAVING = frozenset({control.ABORT, control.LEAVING})


class RelayError(Exception):
    """The relay could not reach or join the launcher's control server."""


@attrs.define(eq=False)
class _Link:
    """One connection: to a rank, or up to the launcher."""

    sock: socket.socket
    decoder: wire.FrameDecoder
    outbox: bytearray = attrs.field(factory=bytearray)
    nonce: bytes = b""
    rank: int | None = None
    attached: bool = False
    closed: bool = False


class ControlRelay:
    """Carries the control connections of one node's ranks (see the module documentation)."""

    def __init__(
        self,
        loop: EventLoop,
        *,
        node: int,
        jobid: str,
        secret: bytes,
        upstream: tuple[str, int],
        local_size: int,
        on_lost: Callable[[str], None],
    ) -> None:
        self._loop = loop
        self.node, self.jobid, self._secret = node, jobid, secret
        self.local_size = local_size
        self._on_lost = on_lost
        self._ranks: dict[int, _Link] = {}
        self._unattached: set[_Link] = set()
        #: Fence requests held back: rank -> request id, for ``self._generation``.
        self._held: dict[int, int] = {}
        #: Fence requests sent up and not answered yet: rank -> request id.
        self._waiting: dict[int, int] = {}
        self._aggregate = True
        self._generation: Any = None
        self._up = self._connect(upstream)
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=max(64, local_size))
        self._listener.setblocking(False)
        loop.add_reader(self._listener, self._accept)

    @property
    def address(self) -> tuple[str, int]:
        """Where the node's ranks connect (their ``OMPY_SERVER``)."""
        host, port = self._listener.getsockname()[:2]
        return host, port

    # -- up to the launcher -------------------------------------------------------------------

    def _connect(self, upstream: tuple[str, int]) -> _Link:
        where = f"{upstream[0]}:{upstream[1]}"
        try:
            sock = socket.create_connection(upstream, timeout=10)
            challenge = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
            nonce = challenge.get("nonce")
            if challenge.get("op") != control.CHALLENGE or not isinstance(nonce, bytes):
                raise RelayError(f"the control server at {where} did not start a handshake")
            proof = auth.proof(self._secret, nonce, auth.ROLE_DAEMON, self.node)
            claim = {"role": auth.ROLE_DAEMON, "rank": self.node, "jobid": self.jobid}
            sock.sendall(wire.encode({"op": control.AUTH, **claim, "proof": proof}))
            answer = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
        except (OSError, wire.ProtocolError) as error:
            raise RelayError(f"cannot join the control server at {where}: {error}") from None
        if answer.get("op") != control.WELCOME:
            raise RelayError(f"the control server at {where} refused: {answer.get('reason')}")
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        keep_alive(sock)
        link = _Link(sock, wire.FrameDecoder())
        self._loop.add_reader(sock, lambda _fd: self._read(link))
        return link

    def _from_up(self, message: dict[str, Any]) -> None:
        op, rank = message.get("op"), message.get("rank")
        if op == control.FENCED:
            generation = message.get("generation")
            waiting, self._waiting = self._waiting, {}
            for waiter, request_id in waiting.items():
                link = self._ranks.get(waiter)
                if link is not None:
                    reply = {"op": control.REPLY, "id": request_id, "ok": True}
                    self._send(link, {**reply, "value": generation})
            return
        link = self._ranks.get(rank) if isinstance(rank, int) else None
        if link is None:
            return  # a rank that is gone already
        if op == control.RELAY and isinstance(message.get("msg"), dict):
            inner = message["msg"]
            if inner.get("op") == control.REPLY:
                self._waiting_done(link, inner)
            self._send(link, inner)
            if inner.get("op") == control.WELCOME:
                link.attached = True
            elif inner.get("op") == control.DENIED:
                self._close(link, tell_up=False)
        elif op == control.DETACH:
            self._close(link, tell_up=False)

    def _waiting_done(self, link: _Link, reply: dict[str, Any]) -> None:
        """A fence request answered on its own (an error): no ``fenced`` will cover it."""
        if link.rank is not None and self._waiting.get(link.rank) == reply.get("id"):
            del self._waiting[link.rank]

    # -- the node's ranks ---------------------------------------------------------------------

    def _accept(self, _fd: int) -> None:
        try:
            sock, _peer = self._listener.accept()
        except OSError:
            return
        sock.setblocking(False)
        link = _Link(
            sock, wire.FrameDecoder(wire.MAX_UNAUTHENTICATED_FRAME), nonce=auth.new_nonce()
        )
        self._unattached.add(link)
        self._loop.add_reader(sock, lambda _fd: self._read(link))
        self._send(link, {"op": control.CHALLENGE, "nonce": link.nonce, "jobid": self.jobid})

    def _authenticate(self, link: _Link, message: dict[str, Any]) -> None:
        rank, proof = message.get("rank"), message.get("proof")
        valid = (
            message.get("op") == control.AUTH
            and message.get("role") == auth.ROLE_RANK
            and message.get("jobid") == self.jobid
            and isinstance(rank, int)
            and isinstance(proof, bytes)
            and auth.verify(self._secret, link.nonce, auth.ROLE_RANK, rank, proof)
        )
        if not valid or rank in self._ranks:
            reason = "wrong job secret" if not valid else f"rank {rank} is already connected"
            self._send(link, {"op": control.DENIED, "reason": reason})
            self._close(link, tell_up=False)
            return
        assert isinstance(rank, int)
        link.rank = rank
        link.decoder.limit = wire.MAX_FRAME
        self._unattached.discard(link)
        self._ranks[rank] = link
        peer = ""
        with contextlib.suppress(OSError):
            peer = "{}:{}".format(*link.sock.getpeername()[:2])
        self._send(self._up, {"op": control.ATTACH, "rank": rank, "peer": peer})

    def _from_rank(self, link: _Link, message: dict[str, Any]) -> None:
        assert link.rank is not None
        op = message.get("op")
        if op == control.FENCE and self._aggregate and isinstance(message.get("id"), int):
            self._held[link.rank] = message["id"]
            self._waiting[link.rank] = message["id"]
            self._generation = message.get("generation")
            if len(self._held) == self.local_size:
                self._release_fence()
            return
        if op in _LEAVING:
            self._stop_aggregating()
        elif op == control.FENCE and isinstance(message.get("id"), int):
            self._waiting[link.rank] = message["id"]
        self._send(self._up, {"op": control.RELAY, "rank": link.rank, "msg": message})

    def _release_fence(self) -> None:
        held, self._held = self._held, {}
        if held:
            requests = [[rank, request_id] for rank, request_id in held.items()]
            fence = {"op": control.FENCE_NODE, "generation": self._generation}
            self._send(self._up, {**fence, "requests": requests})

    def _stop_aggregating(self) -> None:
        """A local rank will enter no further fence: relay what is held, and the rest alone."""
        if self._aggregate:
            self._aggregate = False
            self._release_fence()

    # -- connections --------------------------------------------------------------------------

    def _read(self, link: _Link) -> None:
        if link.closed:
            return
        try:
            data = link.sock.recv(_READ_SIZE)
            messages = link.decoder.feed(data) if data else None
        except (BlockingIOError, InterruptedError):
            return
        except (OSError, wire.ProtocolError):
            messages = None
        if messages is None:
            if link is self._up:
                self._lose_up("the launcher's control server closed the connection")
            else:
                self._close(link, tell_up=True)
            return
        for message in messages:
            if link.closed:
                return
            if link is self._up:
                self._from_up(message)
            elif link.rank is None:
                self._authenticate(link, message)
            else:
                self._from_rank(link, message)

    def _send(self, link: _Link, message: dict[str, Any]) -> None:
        if link.closed:
            return
        link.outbox += wire.encode(message)
        self._flush(link)

    def _flush(self, link: _Link) -> None:
        try:
            while link.outbox:
                sent = link.sock.send(link.outbox)
                del link.outbox[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            if link is self._up:
                self._lose_up("the connection to the launcher's control server failed")
            else:
                self._close(link, tell_up=True)
            return
        if link.outbox:
            self._loop.add_writer(link.sock, lambda _fd: self._flush(link))
        else:
            self._loop.remove_writer(link.sock)

    def _close(self, link: _Link, *, tell_up: bool) -> None:
        if link.closed:
            return
        link.closed = True
        self._unattached.discard(link)
        self._loop.remove_reader(link.sock)
        self._loop.remove_writer(link.sock)
        with contextlib.suppress(OSError):
            link.sock.close()
        if link.rank is not None and self._ranks.get(link.rank) is link:
            del self._ranks[link.rank]
            self._stop_aggregating()
            if tell_up:
                reason = "the connection closed"
                self._send(self._up, {"op": control.DETACH, "rank": link.rank, "reason": reason})

    def _lose_up(self, why: str) -> None:
        self._close(self._up, tell_up=False)
        self._on_lost(why)

    def close(self) -> None:
        """Close every connection (the launcher sees the ranks' connections end with it)."""
        for link in [*self._ranks.values(), *self._unattached]:
            self._close(link, tell_up=False)
        self._close(self._up, tell_up=False)
        self._loop.remove_reader(self._listener)
        self._listener.close()
