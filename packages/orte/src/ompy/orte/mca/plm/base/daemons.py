"""The launcher's side of the daemons: their connections, served from one thread.

:class:`DaemonServer` listens on every interface, authenticates each daemon with the launch
secret (:mod:`ompy.orte.control.auth`, role ``daemon``, the node's index as the claimed rank)
and then keeps, per node, a :class:`Daemon` record: whether it reported in, the ranks it
started, and why it was lost.  The main thread (the plm module) asks it to send requests and
waits on a condition for the answers; output arrives as bytes written straight into the pipes
the iof module reads, so the launcher's output path is the one of local ranks.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.opal.threads import InternalThread
from ompy.orte.control import auth, wire
from ompy.orte.control import protocol as control
from ompy.orte.daemon import agent, protocol

from .remote import RemoteRank, Sink

_READ_SIZE = 1 << 16


@attrs.frozen
class SpawnAnswer:
    """A daemon's answer to ``spawn``: the rank's pid, or why it could not start."""

    pid: int | None
    message: str = ""
    code: int = 0


@attrs.define(eq=False)
class Daemon:
    """One node's daemon, as the launcher knows it (fields change in the server thread)."""

    node: int
    name: str
    #: The remote shell (or the local process) that runs it, when the launcher started it.
    process: subprocess.Popen[bytes] | None = None
    sock: socket.socket | None = None
    decoder: wire.FrameDecoder = attrs.field(factory=wire.FrameDecoder)
    outbox: bytearray = attrs.field(factory=bytearray)
    host: str = ""
    pid: int = 0
    via: str = ""
    connected: bool = False
    lost: str | None = None
    exiting: bool = False
    ranks: dict[int, RemoteRank] = attrs.field(factory=dict)
    #: Answers to ``spawn`` by rank, until the spawning thread takes them.
    answers: dict[int, SpawnAnswer] = attrs.field(factory=dict)


@attrs.define(eq=False)
class _Pending:
    """A connection that has not authenticated yet."""

    sock: socket.socket
    nonce: bytes
    decoder: wire.FrameDecoder


class DaemonServer:
    """Accepts and serves the daemons of one launch (see the module documentation)."""

    def __init__(self, secret: bytes, launch_id: str, daemons: dict[int, Daemon]) -> None:
        self._secret = secret
        self.launch_id = launch_id
        self.daemons = daemons
        self.cond = threading.Condition()
        self._listener = socket.create_server(("0.0.0.0", 0), backlog=128)
        self._listener.setblocking(False)
        self._loop = EventLoop()
        self._pending: dict[int, _Pending] = {}
        self._by_fd: dict[int, Daemon] = {}
        #: pidfd of a process that runs daemons -> those daemons and the process
        self._watched: dict[int, tuple[tuple[Daemon, ...], subprocess.Popen[bytes]]] = {}
        #: node -> the message each daemon is sent once it has authenticated (set before
        #: :meth:`start`; read only by the server thread after it).
        self.greetings: dict[int, dict[str, Any]] = {}
        self._stdin_fd: int | None = None
        self._stdin_rank: RemoteRank | None = None
        self._stopping = False
        self._thread = InternalThread(target=self._serve, name="ompy-plm-ssh", daemon=True)

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1]

    def start(self) -> None:
        self._loop.add_reader(self._listener, self._accept)
        self._thread.start()

    def call(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` in the server thread (from any thread)."""
        self._loop.post(callback)

    def stop(self) -> None:
        """Stop serving and close every connection (the daemons then end their ranks)."""

        def stopping() -> None:
            self._stopping = True

        self._loop.post(stopping)
        self._thread.join(timeout=10)
        for daemon in self.daemons.values():
            if daemon.sock is not None:
                with contextlib.suppress(OSError):
                    daemon.sock.close()
                daemon.sock = None
        for pending in self._pending.values():
            pending.sock.close()
        for pidfd in self._watched:
            os.close(pidfd)
        self._watched.clear()
        self._listener.close()
        if self._stdin_fd is not None:
            os.close(self._stdin_fd)
            self._stdin_fd = None
        self._loop.close()

    def _serve(self) -> None:
        while not self._stopping:
            self._loop.run_once(1.0)
            with self.cond:
                self.cond.notify_all()

    # -- watching the processes that run the daemons ------------------------------------------

    def watch(self, daemons: Sequence[Daemon], process: subprocess.Popen[bytes]) -> None:
        """Notice (in the server thread) when ``process``, which runs ``daemons`` (one daemon
        through a remote shell, or several through one launcher step), ends."""
        pidfd = os.pidfd_open(process.pid)
        self._watched[pidfd] = (tuple(daemons), process)
        self._loop.add_reader(pidfd, self._on_process_exit)

    def _on_process_exit(self, fd: int) -> None:
        daemons, process = self._watched.pop(fd)
        self._loop.remove_reader(fd)
        os.close(fd)
        process.wait()
        for daemon in daemons:
            if not daemon.exiting:
                self._lose(daemon, agent.describe_failure(process, daemon.name))

    # -- connections --------------------------------------------------------------------------

    def _accept(self, _fd: int) -> None:
        try:
            sock, _peer = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            return
        sock.setblocking(False)
        pending = _Pending(
            sock, auth.new_nonce(), wire.FrameDecoder(wire.MAX_UNAUTHENTICATED_FRAME)
        )
        self._pending[sock.fileno()] = pending
        with contextlib.suppress(OSError):
            sock.send(wire.encode({"op": control.CHALLENGE, "nonce": pending.nonce}))
        self._loop.add_reader(sock, self._on_pending)
        self._loop.call_later(10.0, lambda: self._drop_pending(pending))

    def _drop_pending(self, pending: _Pending) -> None:
        if self._pending.pop(pending.sock.fileno(), None) is pending:
            self._loop.remove_reader(pending.sock)
            pending.sock.close()

    def _on_pending(self, fd: int) -> None:
        pending = self._pending[fd]
        try:
            data = pending.sock.recv(wire.MAX_UNAUTHENTICATED_FRAME)
            messages = pending.decoder.feed(data) if data else None
        except (BlockingIOError, InterruptedError):
            return
        except (OSError, wire.ProtocolError):
            messages = None
        if messages is None:
            self._drop_pending(pending)
            return
        if not messages:
            return
        message = messages[0]
        node, role = message.get("rank"), message.get("role")
        daemon = self.daemons.get(node) if isinstance(node, int) else None
        ok = (
            isinstance(node, int)
            and message.get("op") == control.AUTH
            and role == protocol.ROLE_DAEMON
            and message.get("jobid") == self.launch_id
            and isinstance(message.get("proof"), bytes)
            and daemon is not None
            and daemon.sock is None
            and daemon.lost is None
            and auth.verify(self._secret, pending.nonce, role, node, message["proof"])
        )
        self._pending.pop(fd)
        self._loop.remove_reader(pending.sock)
        if not ok or daemon is None:
            with contextlib.suppress(OSError):
                pending.sock.send(
                    wire.encode({"op": control.DENIED, "reason": "not a daemon of this launch"})
                )
            pending.sock.close()
            return
        daemon.sock = pending.sock
        daemon.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol.keep_alive(daemon.sock)
        self._by_fd[fd] = daemon
        self._send(daemon, {"op": control.WELCOME})
        greeting = self.greetings.get(daemon.node)
        if greeting is not None:
            self._send(daemon, greeting)
        self._loop.add_reader(daemon.sock, self._on_readable)

    def send(self, daemon: Daemon, message: dict[str, Any]) -> None:
        """Send ``message`` to ``daemon`` (from any thread)."""
        self._loop.post(lambda: self._send(daemon, message))

    def _send(self, daemon: Daemon, message: dict[str, Any]) -> None:
        if daemon.sock is None:
            return
        daemon.outbox += wire.encode(message)
        self._flush(daemon)

    def _flush(self, daemon: Daemon) -> None:
        sock = daemon.sock
        if sock is None:
            return
        try:
            while daemon.outbox:
                sent = sock.send(daemon.outbox)
                del daemon.outbox[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as error:
            self._lose(daemon, f"its connection failed: {error}")
            return
        if daemon.outbox:
            self._loop.add_writer(sock, lambda _fd: self._flush(daemon))
        else:
            self._loop.remove_writer(sock)

    def _on_readable(self, fd: int) -> None:
        daemon = self._by_fd.get(fd)
        if daemon is None or daemon.sock is None:
            return
        try:
            data = daemon.sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._lose(daemon, f"its connection failed: {error}")
            return
        if not data:
            self._close(daemon)
            if not daemon.exiting:
                self._lose(daemon, "its connection closed")
            return
        try:
            for message in daemon.decoder.feed(data):
                op = protocol.check(message, protocol.FROM_DAEMON)
                getattr(self, f"_on_{op}")(daemon, message)
        except (wire.ProtocolError, protocol.DaemonProtocolError) as error:
            self._close(daemon)
            self._lose(daemon, f"it sent a bad message: {error}")

    def _close(self, daemon: Daemon) -> None:
        if daemon.sock is None:
            return
        self._by_fd.pop(daemon.sock.fileno(), None)
        self._loop.remove_reader(daemon.sock)
        self._loop.remove_writer(daemon.sock)
        daemon.sock.close()
        daemon.sock = None

    def _lose(self, daemon: Daemon, why: str) -> None:
        """``daemon`` is gone: its ranks count as killed with it, waiting spawns fail."""
        self._close(daemon)
        if daemon.lost is not None or daemon.exiting:
            return
        daemon.lost = why
        for rank in daemon.ranks.values():
            for sink in rank.sinks.values():
                if not sink.closed:
                    self._loop.remove_writer(sink.fd)
            rank.daemon_lost(f"the ompy daemon on {daemon.name} was lost: {why}")
        with self.cond:
            self.cond.notify_all()

    # -- messages from daemons ----------------------------------------------------------------

    def _on_hello(self, daemon: Daemon, message: dict[str, Any]) -> None:
        daemon.host, daemon.pid, daemon.via = message["host"], message["pid"], message["via"]
        daemon.connected = True
        with self.cond:
            self.cond.notify_all()

    def _on_started(self, daemon: Daemon, message: dict[str, Any]) -> None:
        with self.cond:
            daemon.answers[message["rank"]] = SpawnAnswer(message["pid"])
            self.cond.notify_all()

    def _on_failed(self, daemon: Daemon, message: dict[str, Any]) -> None:
        with self.cond:
            daemon.answers[message["rank"]] = SpawnAnswer(None, message["message"], message["code"])
            self.cond.notify_all()

    def _on_output(self, daemon: Daemon, message: dict[str, Any]) -> None:
        rank = daemon.ranks.get(message["rank"])
        sink = rank.sinks.get(message["fd"]) if rank is not None else None
        if sink is None:
            return
        data = message["data"]
        if data:
            sink.pending += data
        else:
            sink.eof = True
        self._write(sink)

    def _write(self, sink: Sink) -> None:
        """Write what ``sink`` holds without blocking: a full pipe waits in the loop, so a slow
        reader (the launcher's main thread, busy starting ranks) never stalls the server."""
        try:
            while sink.pending:
                written = os.write(sink.fd, sink.pending)
                del sink.pending[:written]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:  # the reader went away: drop the output, keep the job
            sink.pending.clear()
        if sink.pending:
            self._loop.add_writer(sink.fd, lambda _fd: self._write(sink))
            return
        self._loop.remove_writer(sink.fd)
        if sink.eof:
            sink.close()

    def _on_exited(self, daemon: Daemon, message: dict[str, Any]) -> None:
        rank = daemon.ranks.get(message["rank"])
        if rank is not None:
            rank.exited(message["status"])

    def _on_lost_child(self, daemon: Daemon, message: dict[str, Any]) -> None:
        child = self.daemons.get(message["node"])
        if child is not None and not child.exiting:
            self._lose(child, f"{message['message']} (reported by the daemon on {daemon.name})")

    # -- standard input of rank 0 -------------------------------------------------------------

    def forward_stdin(self, rank: RemoteRank, daemon: Daemon) -> None:
        """Send the launcher's standard input to ``rank`` (from any thread)."""

        def start() -> None:
            try:
                fd = os.dup(0)
            except OSError:
                self._send(daemon, {"op": protocol.STDIN, "rank": rank.rank, "data": b""})
                return
            self._stdin_fd, self._stdin_rank = fd, rank

            def readable(_fd: int) -> None:
                try:
                    data = os.read(fd, _READ_SIZE)
                except OSError:
                    data = b""
                self._send(daemon, {"op": protocol.STDIN, "rank": rank.rank, "data": data})
                if not data:
                    self._loop.remove_reader(fd)

            try:
                self._loop.add_reader(fd, readable)
            except OSError:  # a regular file (epoll refuses those): all of it is there now
                while self._stdin_fd is not None:
                    data = os.read(fd, _READ_SIZE)
                    self._send(daemon, {"op": protocol.STDIN, "rank": rank.rank, "data": data})
                    if not data:
                        break

        self._loop.post(start)
