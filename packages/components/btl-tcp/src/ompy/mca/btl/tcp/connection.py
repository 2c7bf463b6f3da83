"""One TCP connection: the handshake state machine, then framed reads and queued gather writes.

Reading: frames are parsed out of a per-connection receive buffer, so one ``recv_into`` may
deliver many small frames; each payload goes to the tag's callback as a view into that buffer.
A frame too large for the buffer is read straight into a target buffer kept by the connection
(grown once, then reused) and delivered whole.  The data of a GET_REPLY is read straight into the
destination of the get it answers (the *sink*): only what the last ``recv_into`` of the buffer
already holds is copied, the rest never passes through the connection.

Writing: the endpoint's queue holds ``[buffers, descriptor]`` entries; :meth:`Connection.flush`
sends as many of them as the socket takes with one ``sendmsg`` (header and payload segments
gathered), keeps the unsent rest in order, and asks for write readiness until the queue drains.
"""

from __future__ import annotations

import errno
import hmac
import os
import socket
import time
from typing import TYPE_CHECKING

from ompy.opal.mca.btl import BtlPeerError, DescriptorFlags

from . import wire
from .poller import READ, READABLE, WRITE
from .rdma import GetPart

if TYPE_CHECKING:
    from .module import TcpBtlModule, TcpEndpoint

_FRAME_UNPACK = wire.FRAME.unpack_from
_FRAME_SIZE = wire.FRAME_SIZE
_KIND_DATA = wire.KIND_DATA
_KIND_BYE = wire.KIND_BYE
_KIND_GET = wire.KIND_GET
_KIND_GET_REPLY = wire.KIND_GET_REPLY
_KIND_GET_ERROR = wire.KIND_GET_ERROR
_GET_REQUEST_UNPACK = wire.GET_REQUEST.unpack_from
_REPLY_UNPACK = wire.GET_REPLY.unpack_from
_REPLY_HEADER_SIZE = _FRAME_SIZE + wire.GET_REPLY.size
#: The shortest payload of each kind that has a fixed part (a GET is exactly this long).
_SMALLEST = {
    _KIND_GET: wire.GET_REQUEST.size,
    _KIND_GET_REPLY: wire.GET_REPLY.size,
    _KIND_GET_ERROR: wire.GET_ERROR.size,
}
_OWNERSHIP = DescriptorFlags.OWNERSHIP
_MAX_IOV = 512

# Handshake states.
CONNECTING, AWAIT_CHALLENGE, AWAIT_VERDICT, AWAIT_HELLO, AWAIT_RESPONSE, OPEN, CLOSED = range(7)


class Connection:
    """A socket to one peer, outgoing (we connected) or incoming (we accepted)."""

    def __init__(
        self,
        module: TcpBtlModule,
        sock: socket.socket,
        *,
        endpoint: TcpEndpoint | None = None,
        receive_buffer: int = 256 * 1024,
    ) -> None:
        self.module = module
        self.sock = sock
        self.fd = sock.fileno()
        self.outgoing = endpoint is not None
        self.endpoint = endpoint
        self.peer_rank = endpoint.proc.rank if endpoint is not None else -1
        self.peer_address = ""
        self.state = CONNECTING if self.outgoing else AWAIT_HELLO
        self.bye_received = False
        self.writing = False
        self._handshake = bytearray()
        self._need = wire.HELLO.size
        self._hello = b""
        self._challenge = b""
        # The receive buffer is allocated by open(), once the peer proved the job secret: a
        # stranger's connection costs a socket and this object, not a quarter of a megabyte.
        self._receive_buffer = receive_buffer
        self.rbuf = bytearray(0)
        self.rview = memoryview(self.rbuf)
        #: When an accepted connection must have finished its handshake (monotonic seconds).
        self.deadline = 0.0
        self.start = 0
        self.end = 0
        self.big: memoryview | None = None
        self._big_buffer = bytearray(0)
        self.big_length = 0
        self.big_filled = 0
        self.big_tag = 0
        self.sink: memoryview | None = None  # where the rest of a GET_REPLY goes
        self.sink_filled = 0
        self.sink_part: GetPart | None = None

    # -- handshake --------------------------------------------------------------------------

    def connect(self, address: tuple[str, int]) -> None:
        """Start a non-blocking connect; the handshake continues when the socket is writable."""
        self.peer_address = f"{address[0]}:{address[1]}"
        code = self.sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS, errno.EAGAIN):
            raise OSError(code, os.strerror(code))
        self.module.poller.add(self.fd, WRITE, self._on_connected)

    def accepted(self) -> None:
        self.module.poller.add(self.fd, READ, self._on_handshake)

    def _on_connected(self, _mask: int) -> int:
        code = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            self.fail(f"cannot connect to {self.peer_address}: {os.strerror(code)}", handshake=True)
            return 1
        module = self.module
        self._hello = wire.HELLO.pack(wire.MAGIC, os.urandom(16), module.me.rank, module.link)
        self._send_small(self._hello)
        self.state = AWAIT_CHALLENGE
        self._need = wire.CHALLENGE_SIZE
        module.poller.modify(self.fd, READ, self._on_handshake)
        return 1

    def _send_small(self, data: bytes) -> None:
        # Handshake messages are tens of bytes on a fresh socket: they always fit at once.
        if self.sock.send(data) != len(data):
            raise OSError(errno.EAGAIN, "the handshake message did not fit in the socket buffer")

    def _on_handshake(self, _mask: int) -> int:
        try:
            chunk = self.sock.recv(self._need - len(self._handshake))
        except BlockingIOError:
            return 0
        except OSError as error:
            self.fail(
                f"connection to {self._who()} failed during the handshake: {error}",
                handshake=True,
                retry=True,
            )
            return 1
        if not chunk:
            self.fail(
                f"{self._who()} closed the connection during the handshake (a process of "
                "another job, or one that does not share this job's secret?)",
                handshake=True,
                retry=True,
            )
            return 1
        self._handshake += chunk
        if len(self._handshake) < self._need:
            return 1
        message = bytes(self._handshake)
        self._handshake.clear()
        try:
            self._advance(message)
        except (wire.HandshakeError, OSError) as error:
            refused = (
                "not an ompy greeting" if self.state == AWAIT_HELLO else "no proof of the secret"
            )
            retry = not isinstance(error, wire.HandshakeError)  # the peer hung up on us
            self.fail(str(error), handshake=True, refused=refused, retry=retry)
        return 1

    def _advance(self, message: bytes) -> None:
        module = self.module
        secret = module.secret
        if self.state == AWAIT_HELLO:
            _nonce, rank, _link = wire.parse_hello(message)
            self._hello = message
            self.peer_rank = rank
            body = wire.CHALLENGE_BODY.pack(os.urandom(16), module.me.rank)
            self._challenge = body + wire.mac(secret, b"acceptor", message, body)
            self._send_small(self._challenge)
            self.state = AWAIT_RESPONSE
            self._need = wire.RESPONSE_SIZE
        elif self.state == AWAIT_CHALLENGE:
            body, proof = message[: wire.CHALLENGE_BODY.size], message[wire.CHALLENGE_BODY.size :]
            if not hmac.compare_digest(proof, wire.mac(secret, b"acceptor", self._hello, body)):
                raise wire.HandshakeError(
                    f"the process listening at {self.peer_address} did not prove knowledge of "
                    f"the job secret; it is not rank {self.peer_rank} of this job"
                )
            _nonce, rank = wire.CHALLENGE_BODY.unpack(body)
            if rank != self.peer_rank:
                raise wire.HandshakeError(
                    f"{self.peer_address} answered as rank {rank}, but rank {self.peer_rank} "
                    "published that address"
                )
            self._send_small(wire.mac(secret, b"connector", self._hello, message))
            self.state = AWAIT_VERDICT
            self._need = wire.VERDICT.size
        elif self.state == AWAIT_RESPONSE:
            expected = wire.mac(secret, b"connector", self._hello, self._challenge)
            if not hmac.compare_digest(message, expected):
                raise wire.HandshakeError(
                    f"a connection claiming to be rank {self.peer_rank} did not prove knowledge "
                    "of the job secret; it was refused"
                )
            accept = module.incoming_verified(self)
            verdict = wire.VERDICT_ACCEPT if accept else wire.VERDICT_DUPLICATE
            self._send_small(wire.VERDICT.pack(verdict))
            if accept:
                self.open()
                if self.endpoint is not None and self.endpoint.queue:
                    self.flush()
            else:
                self.close()
        elif self.state == AWAIT_VERDICT:
            (verdict,) = wire.VERDICT.unpack(message)
            if verdict == wire.VERDICT_ACCEPT:
                self.open()
                module.outgoing_accepted(self)
            elif verdict == wire.VERDICT_DUPLICATE:
                self.close()
                module.outgoing_refused(self)
            else:
                raise wire.HandshakeError(f"{self._who()} sent an unknown verdict {verdict}")

    def _who(self) -> str:
        if self.peer_rank >= 0:
            return f"rank {self.peer_rank}" + (
                f" at {self.peer_address}" if self.peer_address else ""
            )
        return "a connecting process"

    def open(self) -> None:
        """The handshake is done: from now on the socket carries frames."""
        self.state = OPEN
        self.rbuf = bytearray(self._receive_buffer)
        self.rview = memoryview(self.rbuf)
        self.module.strangers.pop(self, None)
        self.module.poller.modify(self.fd, READ, self._on_event)

    # -- established ------------------------------------------------------------------------

    def _on_event(self, mask: int) -> int:
        events = 0
        if mask & WRITE:
            self.flush()
            events = 1
        if mask & READABLE and self.state == OPEN:
            events += self.receive()
        return events

    def receive(self) -> int:
        """Read what the socket has and deliver every complete frame."""
        events = 0
        if self.sink is not None:
            events = self._receive_sink()
            if self.sink is not None or self.state != OPEN:
                return events
        if self.big is not None:
            return events + self._receive_big()
        try:
            count = self.sock.recv_into(self.rview[self.end :])
        except BlockingIOError:
            return events
        except OSError as error:
            self.lost(f"the connection to rank {self.peer_rank} failed: {error}")
            return events + 1
        if not count:
            self._eof()
            return events + 1
        self.end += count
        self.module.bytes_received += count
        return events + self._parse()

    def _parse(self) -> int:
        rbuf = self.rbuf
        rview = self.rview
        start = self.start
        end = self.end
        module = self.module
        callbacks = module.callbacks
        delivered = 0
        while end - start >= _FRAME_SIZE:
            length, kind, tag = _FRAME_UNPACK(rbuf, start)
            total = _FRAME_SIZE + length
            if kind != _KIND_DATA and length < _SMALLEST.get(kind, 0):
                self.lost(
                    f"rank {self.peer_rank} sent a frame of kind {kind} with only {length} "
                    "bytes (a protocol error)"
                )
                return delivered + 1
            if kind == _KIND_GET_REPLY and end - start >= _REPLY_HEADER_SIZE:
                self.start = start
                self.end = end
                outcome = self._reply(length - wire.GET_REPLY.size)
                if outcome < 0:  # the rest of the reply comes straight from the socket
                    return delivered + self._receive_sink()
                if self.state != OPEN:
                    return delivered + 1
                start = self.start
                end = self.end
                delivered += outcome
                continue
            if end - start < total:
                if total > len(rbuf) and kind == _KIND_DATA:
                    self._start_big(length, tag, start, end)
                    return delivered + self._receive_big()
                if total > len(rbuf) and kind != _KIND_GET_REPLY:
                    self.lost(
                        f"rank {self.peer_rank} sent a {length}-byte frame of kind {kind}, "
                        "longer than any such frame can be (a protocol error)"
                    )
                    return delivered + 1
                if start + max(total, _REPLY_HEADER_SIZE) > len(rbuf):  # make room at the front
                    rview[: end - start] = rview[start:end]
                    end -= start
                    start = 0
                break
            # Positions are saved first: callbacks may re-enter (sends, not progress).
            self.start = start + total
            self.end = end
            if kind == _KIND_DATA:
                callback = callbacks[tag]
                if callback is None:
                    module.no_callback(tag)
                callback(module, tag, rview[start + _FRAME_SIZE : start + total])
            elif not self._control(kind, rview[start + _FRAME_SIZE : start + total]):
                return delivered + 1
            start += total
            delivered += 1
        if start == end:
            start = end = 0
        elif start + _REPLY_HEADER_SIZE > len(rbuf):  # a partial header at the very end: move it
            rview[: end - start] = rview[start:end]
            end -= start
            start = 0
        self.start = start
        self.end = end
        return delivered

    def _control(self, kind: int, payload: memoryview) -> bool:
        """A frame that is not data (BYE, GET, GET_ERROR); False when the connection is gone."""
        if kind == _KIND_BYE:
            self.bye_received = True
        elif kind == _KIND_GET:
            get_id, key, offset, size = _GET_REQUEST_UNPACK(payload)
            if self.endpoint is None:
                self.lost(
                    f"rank {self.peer_rank} sent a GET before this process added it as a peer "
                    "(a protocol error: a get follows a message this process sent it)"
                )
                return False
            try:
                self.module.serve_get(self.endpoint, get_id, key, offset, size)
            except BtlPeerError:
                return False  # the connection is gone; the module reported it
        elif kind == _KIND_GET_ERROR:
            return self._get_error(payload)
        else:
            self.lost(f"rank {self.peer_rank} sent a frame of unknown kind {kind}")
            return False
        return self.state == OPEN

    def _part(self, get_id: int, what: str) -> GetPart | None:
        """The get part a reply or error answers, or None (and the connection lost) if unknown."""
        endpoint = self.endpoint
        part = endpoint.gets.get(get_id) if endpoint is not None else None
        if part is None:
            self.lost(
                f"rank {self.peer_rank} sent a {what} for get {get_id}, which is not in flight "
                "(a protocol error)"
            )
        return part

    def _reply(self, size: int) -> int:
        """A GET_REPLY header is in the buffer at ``start``: place its data.

        Returns 1 when the whole reply was in the buffer, -1 when the rest must be read into the
        sink, 0 when the connection was lost (unknown get, or a reply outside the get).
        """
        start = self.start
        end = self.end
        get_id, position = _REPLY_UNPACK(self.rbuf, start + _FRAME_SIZE)
        part = self._part(get_id, "reply")
        if part is None:
            return 0
        if position + size > len(part.view):
            self.lost(
                f"rank {self.peer_rank} answered get {get_id} with bytes {position}.."
                f"{position + size}, outside the {len(part.view)} bytes asked for"
            )
            return 0
        target = part.view[position : position + size]
        data = start + _REPLY_HEADER_SIZE
        have = min(end - data, size)
        target[:have] = self.rview[data : data + have]
        if have < size:
            self.start = self.end = 0  # everything buffered was this reply's
            self.sink = target
            self.sink_filled = have
            self.sink_part = part
            return -1
        self.start = data + have
        if self.start == end:
            self.start = self.end = 0
        self._part_filled(part, size)
        return 1

    def _part_filled(self, part: GetPart, size: int) -> None:
        part.filled += size
        if part.filled >= len(part.view):
            del self.endpoint.gets[part.id]
            part.get.part_done(None)

    def _receive_sink(self) -> int:
        sink = self.sink
        size = len(sink)
        filled = self.sink_filled
        recv_into = self.sock.recv_into
        module = self.module
        eof = False  # handled outside the try, as in _receive_big
        try:
            while filled < size:
                count = recv_into(sink[filled:])
                if not count:
                    eof = True
                    break
                filled += count
        except BlockingIOError:
            module.bytes_received += filled - self.sink_filled
            self.sink_filled = filled
            return 0
        except OSError as error:
            self.lost(f"the connection to rank {self.peer_rank} failed: {error}")
            return 1
        module.bytes_received += filled - self.sink_filled
        if eof:
            self.sink_filled = filled
            self._eof()
            return 1
        part = self.sink_part
        self.sink = self.sink_part = None
        self.sink_filled = 0
        self._part_filled(part, size)
        return 1

    def _get_error(self, payload: memoryview) -> bool:
        """The peer could not answer a get: fail it with the peer's reason. False if lost."""
        (get_id,) = wire.GET_ERROR.unpack_from(payload)
        part = self._part(get_id, "GET_ERROR")
        if part is None:
            return False
        del self.endpoint.gets[get_id]
        reason = bytes(payload[wire.GET_ERROR.size :]).decode("utf-8", "replace")
        who = f"tcp {self.module.name}: a get from rank {self.peer_rank}"
        part.get.part_done(BtlPeerError(f"{who} failed: {reason}"))
        return True

    def _start_big(self, length: int, tag: int, start: int, end: int) -> None:
        if len(self._big_buffer) < length:
            self._big_buffer = bytearray(length)
        big = memoryview(self._big_buffer)
        have = end - start - _FRAME_SIZE
        big[:have] = self.rview[start + _FRAME_SIZE : end]
        self.big = big
        self.big_length = length
        self.big_filled = have
        self.big_tag = tag
        self.start = self.end = 0

    def _receive_big(self) -> int:
        big = self.big
        length = self.big_length
        filled = self.big_filled
        recv_into = self.sock.recv_into
        # The end of the stream is handled outside the try: the callbacks it runs may raise
        # (a BtlPeerError is an OSError) and must not be taken for a failed read.
        eof = False
        try:
            while filled < length:
                count = recv_into(big[filled:length])
                if not count:
                    eof = True
                    break
                filled += count
        except BlockingIOError:
            self.module.bytes_received += filled - self.big_filled
            self.big_filled = filled
            return 0
        except OSError as error:
            self.lost(f"the connection to rank {self.peer_rank} failed: {error}")
            return 1
        self.module.bytes_received += filled - self.big_filled
        if eof:
            self.big_filled = filled
            self._eof()
            return 1
        self.big = None
        self.big_filled = 0
        module = self.module
        tag = self.big_tag
        callback = module.callbacks[tag]
        if callback is None:
            module.no_callback(tag)
        callback(module, tag, big[:length])
        return 1

    def _eof(self) -> None:
        if self.bye_received and self.big is None and self.sink is None and self.start == self.end:
            self.close()
            self.module.connection_closed(self)
        else:
            self.lost(
                f"rank {self.peer_rank} closed its connection to {self.module.name} without "
                "finalizing (did the process die?)"
            )

    # -- writing ----------------------------------------------------------------------------

    def flush(self) -> None:
        """Send queued entries, in order, until the queue is empty or the socket is full."""
        queue = self.endpoint.queue
        sendmsg = self.sock.sendmsg
        module = self.module
        while queue:
            iov: list = []
            for entry in queue:
                iov.extend(entry[0])
                if len(iov) >= _MAX_IOV:
                    break
            try:
                sent = sendmsg(iov)
            except BlockingIOError:
                sent = 0
            except OSError as error:
                self.lost(f"sending to rank {self.peer_rank} failed: {error}")
                return
            wanted = sum(len(buffer) for buffer in iov)
            partial = sent < wanted
            while sent:
                entry = queue[0]
                buffers = entry[0]
                while buffers and sent:
                    size = len(buffers[0])
                    if sent >= size:
                        sent -= size
                        del buffers[0]
                    else:
                        buffers[0] = memoryview(buffers[0])[sent:]
                        sent = 0
                if not buffers:
                    queue.popleft()
                    module.completed(self.endpoint, entry[1])
            if partial:  # the socket is full: wait until it drains
                break
        self.want_write(bool(queue))

    def want_write(self, wanted: bool = True) -> None:
        if wanted != self.writing and self.state == OPEN:
            self.writing = wanted
            self.module.poller.modify(self.fd, READ | WRITE if wanted else READ)

    # -- endings ----------------------------------------------------------------------------

    def fail(
        self, reason: str, handshake: bool = False, refused: str = "", retry: bool = False
    ) -> None:
        """The handshake failed or was refused.

        ``refused``: what an incoming peer did wrong, for the module's aggregated warning (empty
        for an ordinary end such as a closed socket).  ``retry``: the peer hung up during the
        handshake (it may have closed us at its handshake deadline while this process was busy
        elsewhere), so an outgoing connection may be tried again.
        """
        self.close()
        self.module.connection_failed(
            self, BtlPeerError(f"tcp {self.module.name}: {reason}"), refused, retry
        )

    def lost(self, reason: str) -> None:
        """An open connection broke."""
        self.close()
        self.module.connection_lost(self, BtlPeerError(f"tcp {self.module.name}: {reason}"))

    def close(self) -> None:
        if self.state == CLOSED:
            return
        self.state = CLOSED
        self.module.strangers.pop(self, None)
        self.module.poller.remove(self.fd)
        self.sock.close()

    def say_goodbye(self) -> None:
        """Flush what is queued, send BYE and stop writing (blocking, bounded by a timeout)."""
        if self.state != OPEN:
            self.close()
            return
        self.module.poller.remove(self.fd)
        sock = self.sock
        sock.settimeout(self.module.finalize_timeout)
        try:
            if self.endpoint is not None:
                queue = self.endpoint.queue
                while queue:
                    buffers, descriptor = queue.popleft()
                    for buffer in buffers:
                        sock.sendall(buffer)
                    self.module.completed(self.endpoint, descriptor)
            sock.sendall(wire.FRAME.pack(0, wire.KIND_BYE, 0))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            self.state = CLOSED
            sock.close()

    def drain_until_eof(self, deadline: float) -> None:
        """Read (and drop) until the peer closes too, so closing cannot reset unread data."""
        if self.state == CLOSED:
            return
        sock = self.sock
        try:
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                if not sock.recv(65536):
                    break
        except OSError:
            pass
        self.state = CLOSED
        sock.close()
