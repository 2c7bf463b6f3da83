"""Messages between the launcher and its fork server: length-prefixed pickles with descriptors.

Both ends are the same user's processes running the same installation, connected by a private
``socketpair``; nothing else can write to the socket, so pickle is safe here.  Descriptors
travel as ``SCM_RIGHTS`` with the first byte of their message, so the receiver reads the
4-byte header with ``recv_fds`` and the body with plain reads.
"""

from __future__ import annotations

import pickle
import socket
import struct
from collections.abc import Sequence
from typing import Any

HEADER = struct.Struct("!I")
#: An exit status on a status pipe: ``os.waitstatus_to_exitcode``, 4-byte signed.
STATUS = struct.Struct("!i")
#: At most this many descriptors per message (a spawn request carries four).
MAX_FDS = 8


def send(connection: socket.socket, message: Any, fds: Sequence[int] = ()) -> None:
    """Send one message, with ``fds`` duplicated into the receiving process."""
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    data = HEADER.pack(len(body)) + body
    sent = socket.send_fds(connection, [data], list(fds)) if fds else connection.send(data)
    if sent < len(data):
        connection.sendall(data[sent:])


def receive(connection: socket.socket) -> tuple[Any, list[int]] | None:
    """The next message and the descriptors that came with it; ``None`` at end of stream."""
    header, fds, _flags, _address = socket.recv_fds(connection, HEADER.size, MAX_FDS)
    if not header:
        return None
    while len(header) < HEADER.size:
        more = connection.recv(HEADER.size - len(header))
        if not more:
            raise ConnectionError("the fork server connection closed inside a message header")
        header += more
    (length,) = HEADER.unpack(header)
    body = bytearray()
    while len(body) < length:
        chunk = connection.recv(min(length - len(body), 1 << 20))
        if not chunk:
            raise ConnectionError("the fork server connection closed inside a message")
        body += chunk
    return pickle.loads(body), list(fds)
