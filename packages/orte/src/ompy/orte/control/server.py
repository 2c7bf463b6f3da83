"""The launcher's control server: authentication, modex, fences and rank life-cycle events.

One background thread serves every rank from one event loop (:mod:`ompy.opal.eventloop`) over
non-blocking sockets, so a job of hundreds of ranks costs one thread, not hundreds.  All job
state lives in that thread; other threads talk to it by posting a task to the loop.

A connection must prove it knows the job secret (see :mod:`.auth`) within ``auth_timeout``
seconds; until then it can send only one small frame, and a connection that fails or stays
silent is closed and reported as :class:`BadClient` without ever touching job state.

Events are delivered by calling ``on_event`` **from the server thread**: keep the callback short
and thread-safe (put the event on a :class:`queue.Queue`, for instance).  An exception raised by
the callback is logged (``ompy.orte``) and otherwise ignored, so it cannot stop the server.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import socket
import threading
from collections.abc import Callable
from typing import Any

import attrs

from ompy.opal import output
from ompy.opal.eventloop import EventLoop, Timer
from ompy.opal.tally import Tally
from ompy.opal.threads import InternalThread

from . import auth, events, protocol, wire
from .errors import ControlError, FenceError, ModexKeyError, RequestError
from .store import ModexStore
from .universe import Universe

DEFAULT_AUTH_TIMEOUT = 10.0
#: How long a rank that calls ``sys.exit`` early waits for the others to reach Finalize.
DEFAULT_EXIT_GRACE = 1.0
#: ``accept`` errors that mean "out of descriptors or memory": pause accepting, do not spin.
_EXHAUSTED = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
#: The first and the longest pause of the listener after such an error (seconds).
FIRST_PAUSE = 0.05
MAX_PAUSE = 1.0
#: Connections accepted per readiness event at most, so that the ranks' requests keep flowing.
ACCEPT_BATCH = 64
_RECV_SIZE = 65536
_log = output.get_logger("orte")


@attrs.define(eq=False)
class _Connection:
    #: ``None`` for a rank reached through its node's daemon (``via``).
    sock: socket.socket | None
    peer: str
    nonce: bytes
    decoder: wire.FrameDecoder
    #: Ends the connection unless it authenticates in time; cancelled once it does.
    handshake_timer: Timer | None = None
    outbox: bytearray = attrs.field(factory=bytearray)
    rank: int | None = None  # set once authenticated
    hello: bool = False
    #: "finalized", "aborted" or "left": an EOF afterwards is expected.
    finished: str | None = None
    closed: bool = False
    #: A node daemon's connection: its node id (it carries its ranks' connections).
    node: int | None = None
    #: A rank's connection carried by this daemon connection.
    via: _Connection | None = None
    #: A daemon connection's ranks, by rank.
    carried: dict[int, _Connection] = attrs.field(factory=dict)


@attrs.define(eq=False)
class _Leaver:
    """A rank that asked to leave with ``sys.exit(code)``, waiting for the others' verdict."""

    conn: _Connection
    request_id: int
    code: int
    how: str
    timer: Timer | None = None


@attrs.define(eq=False)
class _StacksRequest:
    waiting: set[int]
    done: threading.Event = attrs.field(factory=threading.Event)
    stacks: dict[int, str] = attrs.field(factory=dict)

    def answer(self, rank: int, text: str) -> None:
        if rank in self.waiting:
            self.waiting.discard(rank)
            self.stacks[rank] = text
        self._check()

    def forget(self, rank: int) -> None:
        self.waiting.discard(rank)
        self._check()

    def _check(self) -> None:
        if not self.waiting:
            self.done.set()


class ControlServer:
    """Serves one job's ranks on a loopback TCP port.

    The port is bound when the server is created, so :attr:`address` can go into the ranks'
    environment (:func:`ompy.orte.control.environment_for_rank`) before :meth:`start`.
    """

    def __init__(
        self,
        jobid: str,
        size: int,
        secret: bytes,
        on_event: Callable[[events.Event], None],
        *,
        host: str = "127.0.0.1",
        auth_timeout: float = DEFAULT_AUTH_TIMEOUT,
        exit_grace: float = DEFAULT_EXIT_GRACE,
        universe: Universe | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a job has at least one rank, got size {size}")
        if len(secret) < 16:
            raise ValueError("the job secret must be at least 16 random bytes")
        self.jobid, self.size, self._secret = jobid, size, secret
        self._on_event = on_event
        self._auth_timeout = auth_timeout
        self._exit_grace = exit_grace
        self._store = ModexStore(size)
        #: The launcher's jobs (dynamic processes); a job of its own when not given.
        self.universe = Universe() if universe is None else universe
        #: This job's first universe rank (``get`` names universe ranks: see universe.py).
        self.base = self.universe.add_job(jobid, size, self._store)
        self._listener = socket.create_server((host, 0), backlog=max(128, size))
        self._listener.setblocking(False)
        self._loop = EventLoop()
        self._lock = threading.Lock()
        self._connections: set[_Connection] = set()
        self._by_rank: dict[int, _Connection] = {}
        self._connected: set[int] = set()  # read by other threads under _lock
        self._finalized: set[int] = set()
        #: Ranks that entered MPI Finalize (its closing synchronization) or finalized.
        self._finalizing: set[int] = set()
        #: Ranks that called ``sys.exit`` and wait to learn whether they may finalize.
        self._leavers: dict[int, _Leaver] = {}
        self._gone: dict[int, str] = {}  # rank -> why it can no longer take part in a fence
        self._fence_waiters: dict[int, tuple[_Connection, int]] = {}
        self._stacks_requests: dict[int, _StacksRequest] = {}
        self._stacks_ids = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._pause = 0.0  # the listener's current pause after EMFILE (0: accepting)
        self._accept_failures = Tally(_log, "the control server could not accept connections")
        self._stopping = False
        self._closed = False

    # -- public API (any thread) -------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` to give the ranks."""
        host, port = self._listener.getsockname()[:2]
        # Bound to every interface (ranks on other hosts): this host's ranks use loopback,
        # remote daemons substitute the address they reach the launcher at.
        return ("127.0.0.1" if host == "0.0.0.0" else host), port

    def start(self) -> None:
        """Serve from a daemon thread named ``ompy-control-server``."""
        if self._thread is not None:
            raise RuntimeError("the control server is already started")
        if self._closed:
            raise RuntimeError("the control server is closed")
        self._loop.add_reader(self._listener, self._accept)
        self._thread = InternalThread(target=self._serve, name="ompy-control-server", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and close every connection (ranks see their connection drop).

        Safe to call from the event callback: the server thread then stops after the callback.
        """
        if self._closed:
            return
        self._closed = True
        self.universe.forget_job(self.jobid, f"job {self.jobid} ended")
        if self._thread is threading.current_thread():  # from the event callback
            self._stopping = True  # the loop releases everything when it returns
            return
        if self._thread is not None:
            self._post(self._stop)
            self._thread.join()
        self._release()

    def _release(self) -> None:
        self._accept_failures.flush()
        for conn in list(self._connections):
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.close()
        self._loop.close()
        self._listener.close()

    def connected_ranks(self) -> frozenset[int]:
        """Ranks that said hello and whose connection is still open (finalized ones included
        until they disconnect)."""
        with self._lock:
            return frozenset(self._connected)

    def finalized_ranks(self) -> frozenset[int]:
        """Ranks that announced a clean finish."""
        with self._lock:
            return frozenset(self._finalized)

    def request_stacks(self, timeout: float) -> dict[int, str]:
        """Ask every connected rank for the Python stacks of all its threads.

        Waits up to ``timeout`` seconds; ranks that do not answer in time are missing from the
        result.  Useful when a job hangs: the launcher prints where each rank is stuck.  Do not
        call it from the event callback (the server thread would wait for itself).
        """
        if self._thread is None or self._closed:
            return {}
        request = _StacksRequest(waiting=set())
        ref = next(self._stacks_ids)
        self._post(lambda: self._send_stacks_request(ref, request))
        request.done.wait(timeout)
        self._post(lambda: self._stacks_requests.pop(ref, None))
        with self._lock:
            return dict(request.stacks)

    def terminate(self, reason: str, ranks: frozenset[int] | None = None) -> None:
        """Tell connected ranks (all, or ``ranks``) to terminate; each sends itself SIGTERM."""
        if self._thread is None or self._closed:
            return
        self._post(lambda: self._send_terminate(reason, ranks))

    # -- cross-thread plumbing ---------------------------------------------------------------

    def _post(self, task: Callable[[], None]) -> None:
        self._loop.post(task)

    def _stop(self) -> None:
        self._stopping = True

    def _emit(self, event: events.Event) -> None:
        try:
            self._on_event(event)
        except Exception:
            _log.exception("the control server's event callback failed")

    # -- the server thread -------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while not self._stopping:
                self._loop.run_once()
        finally:
            if self._closed and self._thread is threading.current_thread():
                self._release()

    def _accept(self, _fd: int = -1) -> None:
        for _ in range(ACCEPT_BATCH):
            try:
                sock, addr = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # keep serving the connected ranks meanwhile
                if error.errno in _EXHAUSTED:
                    self._pause_accepting(error)
                else:
                    self._accept_failures.note(error.strerror or str(error))
                return
            self._pause = 0.0
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(
                sock,
                f"{addr[0]}:{addr[1]}",
                auth.new_nonce(),
                wire.FrameDecoder(wire.MAX_UNAUTHENTICATED_FRAME),
            )
            conn.handshake_timer = self._loop.call_later(
                self._auth_timeout, lambda conn=conn: self._expire_handshake(conn)
            )
            self._connections.add(conn)
            self._loop.add_reader(sock, lambda _fd, conn=conn: self._on_readable(conn))
            self._send(conn, {"op": protocol.CHALLENGE, "nonce": conn.nonce, "jobid": self.jobid})

    def _pause_accepting(self, error: OSError) -> None:
        """Out of descriptors: the listener stays readable, so stop watching it for a while
        (a pause that doubles up to :data:`MAX_PAUSE`) instead of spinning on it."""
        self._pause = min(MAX_PAUSE, self._pause * 2) if self._pause else FIRST_PAUSE
        self._loop.remove_reader(self._listener)
        self._loop.call_later(self._pause, self._resume_accepting)
        self._accept_failures.note(f"{error.strerror}; paused accepting")

    def _resume_accepting(self) -> None:
        if not self._stopping and not self._closed:
            self._loop.add_reader(self._listener, self._accept)

    def _expire_handshake(self, conn: _Connection) -> None:
        if conn.rank is None and conn.node is None and not conn.closed:
            self._refuse(
                conn, f"did not authenticate within {self._auth_timeout:g} s", tell_peer=False
            )

    def _on_readable(self, conn: _Connection) -> None:
        if not conn.closed:
            self._read(conn)

    def _on_writable(self, conn: _Connection) -> None:
        if not conn.closed:
            self._flush(conn)

    def _read(self, conn: _Connection) -> None:
        assert conn.sock is not None
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._drop(conn, f"connection error: {error}")
            return
        if not data:
            self._drop(conn, "the connection closed")
            return
        try:
            messages = conn.decoder.feed(data)
        except wire.ProtocolError as error:
            self._refuse(conn, f"sent a bad frame: {error}", tell_peer=False)
            return
        for message in messages:
            if conn.closed:
                return
            if conn.node is not None:
                self._on_daemon_message(conn, message)
            elif conn.rank is None:
                self._authenticate(conn, message)
            else:
                self._handle(conn, message)

    # -- handshake ---------------------------------------------------------------------------

    def _authenticate(self, conn: _Connection, message: dict[str, Any]) -> None:
        try:
            op = protocol.check_client_message(message)
        except RequestError as error:
            self._refuse(conn, f"bad handshake: {error}")
            return
        if op != protocol.AUTH:
            self._refuse(conn, f"sent '{op}' before authenticating")
            return
        role, rank = message["role"], message["rank"]
        if not auth.verify(self._secret, conn.nonce, role, rank, message["proof"]):
            self._refuse(conn, f"wrong job secret (claimed {role} {rank})")
            return
        if message["jobid"] != self.jobid:
            self._refuse(conn, f"belongs to job {message['jobid']!r}, not {self.jobid!r}")
            return
        if role == auth.ROLE_DAEMON:
            self._admit_daemon(conn, rank)
            return
        if role != auth.ROLE_RANK:
            self._refuse(conn, f"unknown role {role!r}")
            return
        if not 0 <= rank < self.size:
            self._refuse(conn, f"claimed rank {rank}, outside this job of size {self.size}")
            return
        if rank in self._by_rank or rank in self._gone or rank in self._finalized:
            self._refuse(conn, f"claimed rank {rank}, which already connected")
            return
        conn.rank = rank
        if conn.handshake_timer is not None:
            conn.handshake_timer.cancel()
        conn.decoder.limit = wire.MAX_FRAME
        self._by_rank[rank] = conn
        self._send(conn, {"op": protocol.WELCOME})

    def _refuse(self, conn: _Connection, reason: str, *, tell_peer: bool = True) -> None:
        """Close a connection that never authenticated (or broke the framing) as a BadClient."""
        if tell_peer:
            self._send(conn, {"op": protocol.DENIED, "reason": reason})
        self._emit(events.BadClient(conn.peer, reason))
        self._close(conn, flush=tell_peer)

    # -- requests ----------------------------------------------------------------------------

    def _handle(self, conn: _Connection, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        try:
            op = protocol.check_client_message(message)
            if op == protocol.AUTH:
                raise RequestError("this connection is already authenticated")
            if op == protocol.STACKS_REPLY:
                request = self._stacks_requests.get(message["ref"])
                if request is not None:
                    with self._lock:
                        request.answer(conn.rank, message["text"])
                return
            if not conn.hello and op != protocol.HELLO:
                raise RequestError(f"'{op}' before 'hello'")
            if conn.finished:
                raise RequestError(f"'{op}' after this rank {conn.finished}")
            getattr(self, f"_on_{op}")(conn, message)
        except ControlError as error:
            self._reply_error(conn, request_id, error)
        except (ValueError, TypeError) as error:
            self._reply_error(conn, request_id, RequestError(str(error)))

    def _reply(self, conn: _Connection, request_id: int, value: Any = None) -> None:
        self._send(conn, {"op": protocol.REPLY, "id": request_id, "ok": True, "value": value})

    def _reply_error(self, conn: _Connection, request_id: Any, error: ControlError) -> None:
        payload = protocol.error_payload(error)
        self._send(conn, {"op": protocol.REPLY, "id": request_id, "ok": False, "error": payload})

    def _on_hello(self, conn: _Connection, message: dict[str, Any]) -> None:
        if conn.hello:
            raise RequestError("'hello' sent twice")
        if message["rank"] != conn.rank:
            raise RequestError(f"hello names rank {message['rank']}, authenticated as {conn.rank}")
        conn.hello = True
        with self._lock:
            self._connected.add(conn.rank)
        self._reply(conn, message["id"])
        self._emit(events.RankConnected(conn.rank, message["pid"], message["host"]))

    def _on_commit(self, conn: _Connection, message: dict[str, Any]) -> None:
        self._store.commit(conn.rank, message["data"])
        self._reply(conn, message["id"])

    def _on_get(self, conn: _Connection, message: dict[str, Any]) -> None:
        rank, key = message["rank"], message["key"]
        if self.base <= rank < self.base + self.size:
            try:
                value = self._store.lookup(rank - self.base, key)
            except ModexKeyError:
                raise ModexKeyError(rank, key) from None
        else:  # a process of another job of this launcher (dynamic processes)
            try:
                value = self.universe.lookup(rank, key)
            except ModexKeyError:
                raise
            except RequestError:
                raise RequestError(
                    f"requested rank {rank!r} is not a rank of this job (size {self.size}, "
                    f"universe ranks {self.base}..{self.base + self.size - 1}) nor of another "
                    f"job of this launcher"
                ) from None
        self._reply(conn, message["id"], value)

    # -- dynamic processes (the universe's services; see universe.py) ------------------------

    def _answerer(self, conn: _Connection, request_id: int) -> Callable[[Any, Any], None]:
        """A callback any thread may call once to answer a request that waits (meet, spawn)."""

        def answer(value: Any, error: Exception | None) -> None:
            def deliver() -> None:
                if conn.closed:
                    return
                if error is None:
                    self._reply(conn, request_id, value)
                else:
                    failure = error if isinstance(error, ControlError) else RequestError(str(error))
                    self._reply_error(conn, request_id, failure)

            self._post(deliver)

        return answer

    def _on_open_port(self, conn: _Connection, message: dict[str, Any]) -> None:
        self._reply(conn, message["id"], self.universe.open_port(self.jobid))

    def _on_close_port(self, conn: _Connection, message: dict[str, Any]) -> None:
        self.universe.close_port(message["port"])
        self._reply(conn, message["id"])

    def _on_meet(self, conn: _Connection, message: dict[str, Any]) -> None:
        answer = self._answerer(conn, message["id"])
        self.universe.meet(message["key"], message["side"], message["value"], self.jobid, answer)

    def _on_publish(self, conn: _Connection, message: dict[str, Any]) -> None:
        self.universe.publish(message["service"], message["port"])
        self._reply(conn, message["id"])

    def _on_unpublish(self, conn: _Connection, message: dict[str, Any]) -> None:
        self.universe.unpublish(message["service"], message["port"])
        self._reply(conn, message["id"])

    def _on_lookup(self, conn: _Connection, message: dict[str, Any]) -> None:
        self._reply(conn, message["id"], self.universe.lookup_name(message["service"]))

    def _on_spawn(self, conn: _Connection, message: dict[str, Any]) -> None:
        answer = self._answerer(conn, message["id"])
        self._emit(events.SpawnRequested(conn.rank, message["apps"], message["port"], answer))

    def _on_fence(self, conn: _Connection, message: dict[str, Any]) -> None:
        generation = message["generation"]
        if self._gone:
            raise FenceError(self._fence_impossible(generation))
        completed = self._store.enter_fence(conn.rank, generation)
        self._fence_waiters[conn.rank] = (conn, message["id"])
        if completed:
            waiters, self._fence_waiters = self._fence_waiters, {}
            self._complete_fence(waiters, generation)

    def _fence_impossible(self, generation: int) -> str:
        who = ", ".join(f"rank {rank} {why}" for rank, why in sorted(self._gone.items()))
        return f"fence {generation} can never complete: {who} without entering it"

    def _on_abort(self, conn: _Connection, message: dict[str, Any]) -> None:
        conn.finished = "aborted"
        self._mark_gone(conn.rank, "aborted")
        # The event goes out before the reply: the rank exits once it has the reply, and the
        # launcher must know why before it sees the exit.
        self._emit(events.RankAborted(conn.rank, message["code"], message["message"]))
        self._reply(conn, message["id"])

    def _on_finalize(self, conn: _Connection, message: dict[str, Any]) -> None:
        conn.finished = "finalized"
        self._finalizing.add(conn.rank)
        with self._lock:
            self._finalized.add(conn.rank)
        self._mark_gone(conn.rank, "finalized")
        self._emit(events.RankFinalized(conn.rank))  # before the reply, as for abort
        self._reply(conn, message["id"])
        self._settle_leavers()

    def _on_finalizing(self, conn: _Connection, message: dict[str, Any]) -> None:
        self._finalizing.add(conn.rank)
        self._reply(conn, message["id"])
        self._settle_leavers()

    def _on_leaving(self, conn: _Connection, message: dict[str, Any]) -> None:
        """A rank exits without having finalized: may it still finalize with the others?

        Open MPI's rule: a rank that exits without finalizing while other ranks are still
        running ends the job.  A rank that calls ``sys.exit`` once every other rank has
        reached Finalize (or called ``sys.exit`` too) ends normally: it finalizes with them.
        It waits ``exit_grace`` seconds for that, so that ranks ending together (each calling
        ``sys.exit(main())``) finalize together; then it leaves and the launcher ends the job
        with its code.  A rank whose finalization failed (``code`` nil) leaves at once.
        """
        code, how = message["code"], message["how"]
        if code is None:
            self._leave(conn, message["id"], None, how)
            return
        leaver = _Leaver(conn, message["id"], code, how)
        self._leavers[conn.rank] = leaver
        leaver.timer = self._loop.call_later(self._exit_grace, self._expire_leavers)
        self._settle_leavers()

    def _unfinished(self, rank: int) -> list[int]:
        """The ranks other than ``rank`` that neither reached Finalize nor called sys.exit."""
        done = self._finalizing.union(self._leavers)
        return sorted(set(range(self.size)) - {rank} - done)

    def _settle_leavers(self) -> None:
        """Let the waiting ``sys.exit`` ranks finalize once every rank is at its end."""
        if not self._leavers or self._unfinished(-1):
            return
        leavers, self._leavers = self._leavers, {}
        for rank, leaver in leavers.items():
            if leaver.timer is not None:
                leaver.timer.cancel()
            self._finalizing.add(rank)
            self._reply(leaver.conn, leaver.request_id, True)

    def _expire_leavers(self) -> None:
        """The grace is over (or a rank failed): every waiting ``sys.exit`` rank leaves."""
        leavers, self._leavers = self._leavers, {}
        for leaver in leavers.values():
            if leaver.timer is not None:
                leaver.timer.cancel()
        for leaver in leavers.values():
            if not leaver.conn.closed:
                self._leave(leaver.conn, leaver.request_id, leaver.code, leaver.how)

    def _leave(self, conn: _Connection, request_id: int, code: int | None, how: str) -> None:
        unfinished = tuple(self._unfinished(conn.rank))
        conn.finished = "left"
        self._mark_gone(conn.rank, "exited without finalizing")
        self._emit(events.RankLeaving(conn.rank, code, how, unfinished))
        self._reply(conn, request_id, False)  # after the event, as for abort

    def _on_exception(self, conn: _Connection, message: dict[str, Any]) -> None:
        # Before the reply, as for abort.
        self._emit(events.RankException(conn.rank, message["traceback"], message["consequential"]))
        self._reply(conn, message["id"])

    def _mark_gone(self, rank: int, why: str) -> None:
        """``rank`` will never enter another fence: fail the ranks waiting in one.

        Unless it finalized, the job is failing: ranks waiting to leave need not wait longer.
        """
        self._gone[rank] = why
        if why != "finalized" and self._leavers:
            self._loop.post(self._expire_leavers)
        if self._fence_waiters:
            reason = self._fence_impossible(self._store.generation)
            waiters, self._fence_waiters = self._fence_waiters, {}
            for waiter, request_id in waiters.values():
                if not waiter.closed:
                    self._reply_error(waiter, request_id, FenceError(reason))

    # -- pushes ------------------------------------------------------------------------------

    def _send_stacks_request(self, ref: int, request: _StacksRequest) -> None:
        ready = [c for c in self._connections if c.hello and not c.closed]
        with self._lock:
            request.waiting.update(c.rank for c in ready)
            request._check()
        self._stacks_requests[ref] = request
        for conn in ready:
            self._send(conn, {"op": protocol.STACKS, "ref": ref})

    def _send_terminate(self, reason: str, ranks: frozenset[int] | None) -> None:
        for conn in [c for c in self._connections if c.hello and not c.closed]:
            if ranks is None or conn.rank in ranks:
                self._send(conn, {"op": protocol.TERMINATE, "reason": reason})

    # -- sending and closing -----------------------------------------------------------------

    def _send(self, conn: _Connection, message: dict[str, Any]) -> None:
        if conn.closed:
            return
        if conn.via is not None:  # a rank behind its node's daemon
            self._send(conn.via, {"op": protocol.RELAY, "rank": conn.rank, "msg": message})
            return
        conn.outbox += wire.encode(message)
        self._flush(conn)

    def _flush(self, conn: _Connection) -> None:
        assert conn.sock is not None
        try:
            while conn.outbox:
                sent = conn.sock.send(conn.outbox)
                del conn.outbox[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as error:
            self._drop(conn, f"connection error: {error}")
            return
        if conn.outbox:
            self._loop.add_writer(conn.sock, lambda _fd, conn=conn: self._on_writable(conn))
        else:
            self._loop.remove_writer(conn.sock)

    def _drop(self, conn: _Connection, reason: str) -> None:
        """The peer went away (or broke the connection)."""
        if conn.closed:
            return
        if conn.node is not None:  # a node daemon: the ranks it carried are lost with it
            self._close(conn, flush=False)
            for carried in list(conn.carried.values()):
                self._drop(carried, f"the connection of its node's daemon: {reason}")
            return
        if conn.rank is None:
            self._emit(events.BadClient(conn.peer, f"{reason} before authenticating"))
        self._close(conn, flush=False)
        rank = conn.rank
        if rank is None or conn.finished in ("aborted", "left"):
            return
        if conn.finished != "finalized":
            self._mark_gone(rank, "was lost")
            self._emit(events.RankLost(rank, reason))

    def _close(self, conn: _Connection, *, flush: bool) -> None:
        if conn.closed:
            return
        if flush and conn.outbox and conn.sock is not None:  # a last word: best effort
            with contextlib.suppress(OSError):
                conn.sock.send(conn.outbox)
        conn.closed = True
        if conn.handshake_timer is not None:
            conn.handshake_timer.cancel()
        self._connections.discard(conn)
        if conn.via is not None:  # tell the daemon to close the rank's own connection
            conn.via.carried.pop(conn.rank, None)  # type: ignore[arg-type]
            self._send(conn.via, {"op": protocol.DETACH, "rank": conn.rank})
        if conn.sock is not None:
            self._loop.remove_reader(conn.sock)
            self._loop.remove_writer(conn.sock)
            with contextlib.suppress(OSError):
                conn.sock.close()
        if conn.rank is not None and self._by_rank.get(conn.rank) is conn:
            del self._by_rank[conn.rank]
            with self._lock:
                self._connected.discard(conn.rank)
                for request in self._stacks_requests.values():
                    request.forget(conn.rank)
            self._fence_waiters.pop(conn.rank, None)

    # -- node daemons ------------------------------------------------------------------------
    #
    # A node daemon (ompy.orte.daemon) authenticates with the job secret as role "daemon" and
    # its node id, then carries the connections of its node's ranks over its own: it checks
    # each rank's proof itself, attaches it here (``attach``), relays its messages both ways
    # (``relay``) and detaches it when its connection ends (``detach``).  The node's part of
    # a fence arrives as one ``fence_node`` (every local rank's request), and its completion
    # goes back as one ``fenced``: the launcher's fence work grows with nodes, not ranks.

    def _admit_daemon(self, conn: _Connection, node: int) -> None:
        if any(c.node == node for c in self._connections if c is not conn and not c.closed):
            self._refuse(conn, f"claimed the daemon of node {node}, which already connected")
            return
        conn.node = node
        if conn.handshake_timer is not None:
            conn.handshake_timer.cancel()
        conn.decoder.limit = wire.MAX_FRAME
        self._send(conn, {"op": protocol.WELCOME})

    def _on_daemon_message(self, conn: _Connection, message: dict[str, Any]) -> None:
        op, rank = message.get("op"), message.get("rank")
        if op == protocol.FENCE_NODE:
            self._on_fence_node(conn, message)
            return
        if not isinstance(rank, int) or isinstance(rank, bool):
            self._drop(conn, f"node daemon sent a bad message {op!r}")
            return
        carried = conn.carried.get(rank)
        if op == protocol.ATTACH:
            self._attach(conn, rank, str(message.get("peer", "")))
        elif op == protocol.RELAY and carried is not None and isinstance(message.get("msg"), dict):
            self._handle(carried, message["msg"])
        elif op == protocol.DETACH and carried is not None:
            self._drop(carried, str(message.get("reason", "its connection closed")))
        elif op not in (protocol.RELAY, protocol.DETACH):
            self._drop(conn, f"node daemon sent an unknown message {op!r}")

    def _attach(self, daemon: _Connection, rank: int, peer: str) -> None:
        """A rank that proved the job secret to its node's daemon: admit it as if direct."""
        conn = _Connection(
            None, f"{peer} via the daemon of node {daemon.node}", b"", wire.FrameDecoder()
        )
        conn.via = daemon
        if not 0 <= rank < self.size:
            reason = f"claimed rank {rank}, outside this job of size {self.size}"
        elif rank in self._by_rank or rank in self._gone or rank in self._finalized:
            reason = f"claimed rank {rank}, which already connected"
        else:
            conn.rank = rank
            daemon.carried[rank] = conn
            self._connections.add(conn)
            self._by_rank[rank] = conn
            self._send(conn, {"op": protocol.WELCOME})
            return
        self._send(
            daemon,
            {"op": protocol.RELAY, "rank": rank, "msg": {"op": protocol.DENIED, "reason": reason}},
        )
        self._emit(events.BadClient(conn.peer, reason))

    def _on_fence_node(self, daemon: _Connection, message: dict[str, Any]) -> None:
        """Every local rank of one node enters fence ``generation`` (one message for all)."""
        generation, requests = message.get("generation"), message.get("requests")
        if not isinstance(generation, int) or not isinstance(requests, list):
            self._drop(daemon, "node daemon sent a bad 'fence_node'")
            return
        for request in requests:
            if not (
                isinstance(request, list) and len(request) == 2 and isinstance(request[0], int)
            ):
                self._drop(daemon, "node daemon sent a bad 'fence_node' request")
                return
            carried = daemon.carried.get(request[0])
            if carried is None:
                continue  # a rank that went away meanwhile: its loss fails the fence
            fence = {"op": protocol.FENCE, "id": request[1], "generation": generation}
            self._handle(carried, fence)

    def _complete_fence(self, waiters: dict[int, tuple[_Connection, int]], generation: int) -> None:
        """Answer every rank waiting in the fence that completed: one ``fenced`` per node
        daemon for the ranks it carries (it answers their requests), a reply to the others."""
        daemons: dict[int, _Connection] = {}
        for waiter, request_id in waiters.values():
            if waiter.via is None:
                self._reply(waiter, request_id, generation)
            else:
                daemons[id(waiter.via)] = waiter.via
        for daemon in daemons.values():
            self._send(daemon, {"op": protocol.FENCED, "generation": generation})
