"""The rank's end of the control connection.

The connection is shared by the application's threads (requests such as ``fence``) and by the
server's pushes (``stacks``, ``terminate``), so one thread owns every read: the *watcher*.  It
hands each ``reply`` to the request waiting for it (matched by request id), answers ``stacks``
itself, and when the connection drops it fails every waiting request with
:class:`ConnectionLostError` and then calls ``on_lost``.  Writers share a lock, so frames from
different threads never interleave.  The watcher blocks in ``recv``: it costs no CPU.

Handlers run on the watcher thread and must not make requests themselves (their replies could
only be read by the thread that is busy running them).
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import sys
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from ompy.opal.threads import InternalThread

from . import auth, protocol, wire
from .errors import AuthenticationError, ConnectionLostError, ControlError

DEFAULT_CONNECT_TIMEOUT = 10.0


#: Frames of the fork server (see :mod:`ompy.orte.launcher.forkserver`) that forked this rank.
_FORK_SERVER_DIR = str(Path(__file__).resolve().parent.parent / "launcher" / "forkserver")


def format_all_stacks() -> str:
    """The current Python stack of every thread of this process, most recent call last.

    A rank forked by the fork server runs its program below the server's own frames; those
    are left out, so the stack starts at the program as it does in an executed rank.
    """
    names = {thread.ident: thread.name for thread in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'Thread "{names.get(ident, "?")}" ({ident}):\n')
        stack = traceback.extract_stack(frame)
        server = [i for i, entry in enumerate(stack) if entry.filename.startswith(_FORK_SERVER_DIR)]
        parts.extend(traceback.format_list(stack[server[-1] + 1 :] if server else stack))
    return "".join(parts)


class ControlClient:
    """An authenticated connection to the control server, with its watcher thread running.

    Create it with :meth:`connect`.  ``on_terminate(reason)`` and ``on_lost(reason)`` are
    called on the watcher thread; ``on_stacks()`` produces the answer to a ``stacks`` push.
    """

    def __init__(
        self,
        sock: socket.socket,
        rank: int,
        *,
        on_terminate: Callable[[str], None] | None = None,
        on_lost: Callable[[str], None] | None = None,
        on_stacks: Callable[[], str] = format_all_stacks,
    ) -> None:
        self.rank = rank
        self._sock = sock
        self._on_terminate = on_terminate
        self._on_lost = on_lost
        self._on_stacks = on_stacks
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        self._ids = itertools.count(1)
        self._lost: str | None = None
        self._closing = False
        self._watcher = InternalThread(target=self._watch, name="ompy-control-watcher", daemon=True)

    @classmethod
    def connect(
        cls,
        address: tuple[str, int],
        secret: bytes,
        jobid: str,
        rank: int,
        *,
        pid: int,
        host: str,
        timeout: float = DEFAULT_CONNECT_TIMEOUT,
        **handlers: Any,
    ) -> ControlClient:
        """Connect, prove the secret, start the watcher and say hello."""
        where = f"{address[0]}:{address[1]}"
        try:
            sock = socket.create_connection(address, timeout=timeout)
        except OSError as error:
            raise ConnectionLostError(
                f"cannot reach the launcher's control server at {where}: {error}"
            ) from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _handshake(sock, secret, jobid, rank, where)
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        client = cls(sock, rank, **handlers)
        client._watcher.start()
        try:
            client.request(protocol.HELLO, timeout=timeout, rank=rank, pid=pid, host=host)
        except BaseException:
            client.close()
            raise
        return client

    # -- requests ----------------------------------------------------------------------------

    def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> Any:
        """Send a request and wait for its reply; raises the server's error if it refused."""
        future: Future[Any] = Future()
        with self._state_lock:
            if self._lost is not None:
                raise ConnectionLostError(self._lost)
            request_id = next(self._ids)
            self._pending[request_id] = (op, future)
        try:
            self._send({"op": op, "id": request_id, **fields})
        except OSError as error:
            with self._state_lock:
                self._pending.pop(request_id, None)
            raise ConnectionLostError(
                f"lost the connection to the launcher while sending '{op}': {error}"
            ) from None
        try:
            return future.result(timeout)
        except FutureTimeout:
            with self._state_lock:
                self._pending.pop(request_id, None)
            raise ControlError(f"the launcher did not answer '{op}' within {timeout:g} s") from None

    def _send(self, message: dict[str, Any]) -> None:
        frame = wire.encode(message)
        with self._send_lock:
            self._sock.sendall(frame)

    @property
    def lost(self) -> str | None:
        """Why the connection was lost, or ``None`` while it is up."""
        return self._lost

    def close(self) -> None:
        """Close the connection on purpose (after finalize): the watcher exits quietly."""
        with self._state_lock:
            self._closing = True
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        if self._watcher.is_alive() and threading.current_thread() is not self._watcher:
            self._watcher.join(timeout=5)
        self._sock.close()

    # -- the watcher thread ------------------------------------------------------------------

    def _watch(self) -> None:
        try:
            while True:
                message = wire.recv_message(self._sock)
                self._dispatch(message)
        except (OSError, wire.ProtocolError) as error:
            reason = str(error) or type(error).__name__
        self._connection_lost(reason)

    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == protocol.REPLY:
            with self._state_lock:
                entry = self._pending.pop(message.get("id"), None)
            if entry is None:
                return  # the caller gave up waiting
            if message.get("ok"):
                entry[1].set_result(message.get("value"))
            else:
                entry[1].set_exception(protocol.error_from_payload(message.get("error")))
        elif op == protocol.STACKS:
            text = self._on_stacks()
            with contextlib.suppress(OSError):
                ref = message.get("ref", 0)
                self._send({"op": protocol.STACKS_REPLY, "ref": ref, "text": text})
        elif op == protocol.TERMINATE:
            if self._on_terminate is not None:
                self._on_terminate(str(message.get("reason", "")))
        else:
            raise wire.ProtocolError(f"unexpected control message {op!r} from the server")

    def _connection_lost(self, reason: str) -> None:
        with self._state_lock:
            closing = self._closing
            self._lost = (
                "the control connection was closed"
                if closing
                else (f"lost the connection to the launcher ({reason})")
            )
            pending, self._pending = self._pending, {}
        # ``on_lost`` first: the run-time's handler exits the process, and it must win the race
        # against a waiting caller that would otherwise raise and exit with another status.
        if not closing and self._on_lost is not None:
            self._on_lost(self._lost)
        for op, future in pending.values():
            future.set_exception(ConnectionLostError(f"{self._lost} while waiting for '{op}'"))


def _handshake(sock: socket.socket, secret: bytes, jobid: str, rank: int, where: str) -> None:
    try:
        challenge = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
        if challenge.get("op") != protocol.CHALLENGE or not isinstance(
            challenge.get("nonce"), bytes
        ):
            raise AuthenticationError(f"{where} did not start a control handshake")
        proof = auth.proof(secret, challenge["nonce"], auth.ROLE_RANK, rank)
        sock.sendall(
            wire.encode(
                {
                    "op": protocol.AUTH,
                    "role": auth.ROLE_RANK,
                    "rank": rank,
                    "jobid": jobid,
                    "proof": proof,
                }
            )
        )
        answer = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
    except (OSError, wire.ProtocolError) as error:
        raise AuthenticationError(f"control handshake with {where} failed: {error}") from None
    if answer.get("op") == protocol.DENIED:
        raise AuthenticationError(
            f"the control server at {where} refused rank {rank}: {answer.get('reason')}"
        )
    if answer.get("op") != protocol.WELCOME:
        raise AuthenticationError(f"unexpected answer {answer.get('op')!r} from {where}")
