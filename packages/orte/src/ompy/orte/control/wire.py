"""Framing of control messages: a 4-byte big-endian length, then one msgpack map.

Control messages are never pickled: a process that can reach the control port must not be able
to make the launcher (or a rank) run code by sending bytes.  msgpack carries only data (maps,
lists, strings, bytes, numbers), and every frame has a size limit that the receiver checks
before buffering the body, so a hostile or broken peer cannot make it allocate without bound.

Two receivers exist: :class:`FrameDecoder` for the server's non-blocking sockets (feed it what
arrived, take out whole messages) and :func:`recv_message` for blocking sockets on the rank side.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import msgpack

#: Largest frame accepted from an authenticated peer (modex values are contact information,
#: typically well under a kilobyte; 16 MiB leaves room without inviting abuse).
MAX_FRAME = 16 * 1024 * 1024
#: Largest frame accepted before a peer has proven it knows the job secret.
MAX_UNAUTHENTICATED_FRAME = 4096

_HEADER = struct.Struct(">I")
HEADER_SIZE = _HEADER.size


class ProtocolError(Exception):
    """A peer sent something that is not a valid control frame."""


class ConnectionClosedError(ProtocolError):
    """The peer closed the connection (cleanly, between frames, or in the middle of one)."""


def encode(message: dict[str, Any]) -> bytes:
    """One frame holding ``message``; ``TypeError`` names a value msgpack cannot carry."""
    if not isinstance(message, dict):
        raise TypeError(f"a control message is a dict, got {type(message).__name__}")
    body = msgpack.packb(message, use_bin_type=True)
    if len(body) > MAX_FRAME:
        raise ValueError(
            f"control message of {len(body)} bytes exceeds the frame limit of {MAX_FRAME} bytes"
        )
    return _HEADER.pack(len(body)) + body


def decode_body(body: bytes) -> dict[str, Any]:
    """The message in a frame body; ``ProtocolError`` if it is not a msgpack map."""
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as error:  # msgpack raises several unrelated types for bad input
        raise ProtocolError(f"undecodable control frame: {error}") from None
    if not isinstance(message, dict):
        raise ProtocolError(f"a control frame must hold a map, got {type(message).__name__}")
    return message


def check_length(length: int, limit: int) -> None:
    if length > limit:
        raise ProtocolError(f"control frame of {length} bytes exceeds the limit of {limit} bytes")


class FrameDecoder:
    """Incremental decoder: feed bytes as they arrive, take out complete messages."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self.limit = limit
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Append ``data`` and return every message that is now complete (maybe none)."""
        self._buffer += data
        messages = []
        while len(self._buffer) >= HEADER_SIZE:
            (length,) = _HEADER.unpack_from(self._buffer)
            check_length(length, self.limit)
            end = HEADER_SIZE + length
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[HEADER_SIZE:end])
            del self._buffer[:end]
            messages.append(decode_body(body))
        return messages

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)


def _recv_exactly(sock: socket.socket, size: int, *, at_boundary: bool) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            where = "between frames" if at_boundary and not chunks else "inside a frame"
            raise ConnectionClosedError(f"the peer closed the control connection ({where})")
        chunks += chunk
    return bytes(chunks)


def recv_message(sock: socket.socket, limit: int = MAX_FRAME) -> dict[str, Any]:
    """Read one whole message from a blocking socket."""
    (length,) = _HEADER.unpack(_recv_exactly(sock, HEADER_SIZE, at_boundary=True))
    check_length(length, limit)
    return decode_body(_recv_exactly(sock, length, at_boundary=False))
