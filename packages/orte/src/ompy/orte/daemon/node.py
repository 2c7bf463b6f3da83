"""The daemon of one node: forks its ranks and relays between them and the launcher.

One thread, one :class:`~ompy.opal.eventloop.EventLoop`: the launcher connection, the ranks'
output pipes, one pidfd per rank, the standard input it was started with (its end-of-file
means the starter is gone) and the remote shells of the daemons it starts itself.  See
:mod:`ompy.orte.daemon` for the life cycle and :mod:`.protocol` for the messages.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import attrs

from ompy.opal.eventloop import EventLoop
from ompy.orte.control import auth, wire
from ompy.orte.control import protocol as control
from ompy.orte.mca.plm import RankProcess, Stdio

from . import agent, protocol
from .protocol import LaunchInfo
from .ranks import RankStarter, SpawnError
from .relay import ControlRelay, RelayError

#: How long a daemon tries to reach its launcher.
CONNECT_TIMEOUT = 10.0
#: How long the daemons a daemon started get to end before they are killed.
CHILD_GRACE = 5.0
_READ_SIZE = 1 << 16
_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


class DaemonError(Exception):
    """The daemon cannot serve (it says why on its stderr and exits with status 1)."""


@attrs.define(eq=False)
class _Rank:
    rank: int
    process: RankProcess
    #: read end -> 1 or 2 (stdout, stderr), while open.
    outputs: dict[int, int]
    #: The write end of the rank's stdin pipe, while the launcher forwards stdin to it.
    stdin_fd: int | None
    status: int | None = None
    #: Forwarded stdin the rank has not read yet, and whether its end-of-file came.
    stdin_pending: bytearray = attrs.field(factory=bytearray)
    stdin_eof: bool = False


@attrs.define(eq=False)
class _Child:
    tree: protocol.NodeTree
    process: subprocess.Popen[bytes]
    pidfd: int


class Daemon:
    """Serves one node of a job (see the module documentation); :meth:`run` returns the status."""

    def __init__(self, info: LaunchInfo, stdin_fd: int = 0) -> None:
        self.info = info
        self.host = socket.gethostname()
        self._stdin_fd = stdin_fd
        self._loop = EventLoop()
        self._sock: socket.socket | None = None
        self._decoder = wire.FrameDecoder()
        self._outbox = bytearray()
        self._ranks: dict[int, _Rank] = {}
        self._by_fd: dict[int, _Rank] = {}
        self._children: dict[int, _Child] = {}
        self._session: Path | None = None
        #: The job's id, from the first rank's environment (names its session and segments).
        self._jobid: str | None = None
        #: Carries the ranks' control connections (made at the first spawn).
        self._relay: ControlRelay | None = None
        self._launcher_host = ""
        self._starter = RankStarter(self.host)
        self._stop: str | None = None  # why the daemon ends; None while it serves
        self._status = 0
        self._signals: list[int] = []

    # -- the whole life -----------------------------------------------------------------------

    def run(self) -> int:
        previous = {s: signal.signal(s, self._record_signal) for s in _SIGNALS}
        self._loop.catch_signals()
        try:
            self._connect()
            self._start_children()
            os.set_blocking(self._stdin_fd, False)
            self._loop.add_reader(self._stdin_fd, self._on_stdin)
            while self._stop is None:
                self._loop.run_once(1.0)
                self._handle_signals()
            return self._status
        except DaemonError as error:
            print(f"ompy daemon on {self.host}: {error}", file=sys.stderr, flush=True)
            return 1
        except Exception:  # a bug: say where, end the ranks (finally), let the launcher know
            traceback.print_exc()
            print(f"ompy daemon on {self.host}: internal error (above)", file=sys.stderr)
            return 1
        finally:
            self._shut_down()
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            self._loop.close()

    def _finish(self, why: str, status: int) -> None:
        if self._stop is None:
            self._stop, self._status = why, status

    # -- connecting ---------------------------------------------------------------------------

    def _via(self) -> str:
        """The address the remote shell that started this daemon came from ("" if none)."""
        return os.environ.get("SSH_CONNECTION", "").split(" ", 1)[0]

    def _own_node(self) -> None:
        """Take the node id from the environment when the launch record says so."""
        variable = self.info.node_variable
        if not variable:
            return
        value = os.environ.get(variable, "")
        if not value.isascii() or not value.isdigit():
            raise DaemonError(f"the node id variable {variable} is {value!r}, not a number")
        tree = protocol.NodeTree(int(value), self.host)
        self.info = attrs.evolve(self.info, tree=tree, node_variable="")

    def _connect(self) -> None:
        self._own_node()
        info = self.info
        host = info.launcher_host or self._via() or "127.0.0.1"
        where = f"{host}:{info.launcher_port}"
        try:
            sock = socket.create_connection((host, info.launcher_port), timeout=CONNECT_TIMEOUT)
        except OSError as error:
            raise DaemonError(f"cannot connect back to the launcher at {where}: {error}") from None
        try:
            challenge = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
            if challenge.get("op") != control.CHALLENGE or not isinstance(
                challenge.get("nonce"), bytes
            ):
                raise DaemonError(f"the launcher at {where} did not start a handshake")
            node = info.tree.node
            answer = {
                "op": control.AUTH,
                "role": protocol.ROLE_DAEMON,
                "rank": node,
                "jobid": info.launch_id,
                "proof": auth.proof(info.secret, challenge["nonce"], protocol.ROLE_DAEMON, node),
            }
            sock.sendall(wire.encode(answer))
            reply = wire.recv_message(sock, wire.MAX_UNAUTHENTICATED_FRAME)
        except (OSError, wire.ProtocolError) as error:
            sock.close()
            raise DaemonError(
                f"the handshake with the launcher at {where} failed: {error}"
            ) from None
        if reply.get("op") != control.WELCOME:
            sock.close()
            raise DaemonError(f"the launcher at {where} refused this daemon: {reply.get('reason')}")
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        protocol.keep_alive(sock)
        self._sock = sock
        self._launcher_host = host
        self._loop.add_reader(sock, self._on_readable)
        self._send(
            {
                "op": protocol.HELLO,
                "node": info.tree.node,
                "host": self.host,
                "pid": os.getpid(),
                "via": self._via(),
            }
        )

    # -- the launcher connection --------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        if self._sock is None:
            return
        self._outbox += wire.encode(message)
        self._flush()

    def _flush(self, _fd: int | None = None) -> None:
        assert self._sock is not None
        try:
            while self._outbox:
                sent = self._sock.send(self._outbox)
                del self._outbox[:sent]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as error:
            self._lost(f"the connection to the launcher failed: {error}")
            return
        if self._outbox:
            self._loop.add_writer(self._sock, self._flush)
        else:
            self._loop.remove_writer(self._sock)

    def _on_readable(self, _fd: int) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self._lost(f"the connection to the launcher failed: {error}")
            return
        if not data:
            self._lost("the launcher closed the connection")
            return
        try:
            messages = self._decoder.feed(data)
            for message in messages:
                op = protocol.check(message, protocol.FROM_LAUNCHER)
                getattr(self, f"_do_{op}")(message)
        except (wire.ProtocolError, protocol.DaemonProtocolError) as error:
            self._lost(f"the launcher sent a bad message: {error}")

    def _lost(self, why: str) -> None:
        """The launcher is gone: nothing may outlive it."""
        if self._sock is not None:
            self._loop.remove_reader(self._sock)
            self._loop.remove_writer(self._sock)
            self._sock.close()
            self._sock = None
        self._finish(f"{why}; its ranks were killed", 1)
        print(f"ompy daemon on {self.host}: {self._stop}", file=sys.stderr, flush=True)

    def _on_stdin(self, fd: int) -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(fd)
            self._lost("the process that started this daemon is gone (its stdin closed)")

    # -- requests -----------------------------------------------------------------------------

    def _session_dir(self, env: dict[str, str]) -> Path:
        if self._session is None:
            from ompy.orte.launcher.session import daemon_dir_prefix, sweep_stale

            base = Path(env.get("TMPDIR") or tempfile.gettempdir())
            sweep_stale(base)  # what killed daemons and launchers left on this node
            prefix = daemon_dir_prefix(self._jobid or "job")
            self._session = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        return self._session

    def _do_warm(self, message: dict[str, Any]) -> None:
        env = dict(os.environ)
        env.update(message["env"])
        self._starter.warm(message["argv"], env, message["cwd"])

    def _do_launch(self, message: dict[str, Any]) -> None:
        """Start every rank of the message, in order (each answered as a ``spawn`` is)."""
        argv, cwd, common = message["argv"], message["cwd"], message["env"]
        for item in message["ranks"]:
            sent = protocol.rank_env(common, item)
            self._start_rank(item["rank"], argv, sent, cwd, item["stdin"])

    def _do_spawn(self, message: dict[str, Any]) -> None:
        self._start_rank(
            message["rank"], message["argv"], message["env"], message["cwd"], message["stdin"]
        )

    def _start_rank(
        self, rank: int, argv: list[str], sent: dict[str, str], cwd: str, stdin: bool
    ) -> None:
        """Start ``rank`` with the variables the launcher ``sent`` over this daemon's own
        environment; answer ``started`` or ``failed``."""
        env = dict(os.environ)
        env.update(sent)
        self._jobid = self._jobid or env.get("OMPY_JOBID")
        if "OMPY_SERVER" in env:  # the ranks reach the launcher's control server through us
            try:
                relay = self._control_relay(env)
            except (RelayError, ValueError) as error:
                text = f"cannot start rank {rank} on {self.host}: {error}"
                self._send({"op": protocol.FAILED, "rank": rank, "message": text, "code": 1})
                return
            env["OMPY_SERVER"] = "{}:{}".format(*relay.address)
        if "OMPY_SESSION_DIR" in env:
            env["OMPY_SESSION_DIR"] = str(self._session_dir(sent))
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        in_r, in_w = os.pipe() if stdin else (subprocess.DEVNULL, None)
        try:
            process = self._starter.start(rank, argv, env, cwd, Stdio(in_r, out_w, err_w))
        except SpawnError as error:
            for fd in (out_r, err_r, in_w):
                if fd is not None:
                    os.close(fd)
            text, code = str(error), error.code
            self._send({"op": protocol.FAILED, "rank": rank, "message": text, "code": code})
            return
        finally:
            for fd in (out_w, err_w, in_r):
                if fd >= 0:
                    os.close(fd)
        record = _Rank(rank, process, {out_r: 1, err_r: 2}, in_w)
        if in_w is not None:
            os.set_blocking(in_w, False)
        self._ranks[rank] = record
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
            self._by_fd[fd] = record
            self._loop.add_reader(fd, self._on_output)
        exit_fd = process.exit_fd()
        if exit_fd is not None:
            self._by_fd[exit_fd] = record
            self._loop.add_reader(exit_fd, self._on_rank_exit)
        else:
            self._loop.call_later(0.05, lambda: self._poll(record))
        self._send({"op": protocol.STARTED, "rank": rank, "pid": process.pid})

    def _on_stdin_data(self, record: _Rank, data: bytes) -> None:
        if record.stdin_fd is None:
            return
        record.stdin_pending += data
        record.stdin_eof = record.stdin_eof or not data
        self._write_stdin(record)

    def _write_stdin(self, record: _Rank) -> None:
        """Write what the rank has been sent without blocking: a rank that does not read its
        stdin must not stall the daemon (its output, exits, the other ranks)."""
        fd = record.stdin_fd
        if fd is None:
            return
        try:
            while record.stdin_pending:
                written = os.write(fd, record.stdin_pending)
                del record.stdin_pending[:written]
        except BlockingIOError:
            self._loop.add_writer(fd, lambda _fd: self._write_stdin(record))
            return
        except OSError:  # the rank stopped reading (closed its stdin or exited)
            record.stdin_pending.clear()
            record.stdin_eof = True
        self._loop.remove_writer(fd)
        if record.stdin_eof:
            os.close(fd)
            record.stdin_fd = None

    def _control_relay(self, env: dict[str, str]) -> ControlRelay:
        if self._relay is None:
            port = int(env["OMPY_SERVER"].rpartition(":")[2])
            self._relay = ControlRelay(
                self._loop,
                node=self.info.tree.node,
                jobid=env["OMPY_JOBID"],
                secret=bytes.fromhex(env["OMPY_SECRET"]),
                upstream=(self._launcher_host, port),
                local_size=int(env["OMPY_LOCAL_SIZE"]),
                on_lost=self._lost,
            )
        return self._relay

    def _do_stdin(self, message: dict[str, Any]) -> None:
        record = self._ranks.get(message["rank"])
        if record is not None:
            self._on_stdin_data(record, message["data"])

    def _do_signal(self, message: dict[str, Any]) -> None:
        record = self._ranks.get(message["rank"])
        if record is not None:
            record.process.signal(message["signum"])

    def _do_exit(self, message: dict[str, Any]) -> None:
        self._finish("the launcher ended the job", 0)

    # -- the ranks ----------------------------------------------------------------------------

    def _on_output(self, fd: int) -> None:
        record = self._by_fd[fd]
        try:
            data = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        self._send(
            {"op": protocol.OUTPUT, "rank": record.rank, "fd": record.outputs[fd], "data": data}
        )
        if not data:
            self._loop.remove_reader(fd)
            del self._by_fd[fd]
            del record.outputs[fd]
            os.close(fd)

    def _on_rank_exit(self, fd: int) -> None:
        record = self._by_fd.get(fd)
        if record is not None:
            self._poll(record)

    def _poll(self, record: _Rank) -> None:
        if record.status is not None:
            return
        status = record.process.poll()
        exit_fd = record.process.exit_fd()
        if status is None:
            if exit_fd is None:
                self._loop.call_later(0.05, lambda: self._poll(record))
            return
        record.status = status
        if exit_fd is not None:
            self._loop.remove_reader(exit_fd)
            self._by_fd.pop(exit_fd, None)
        record.process.signal(signal.SIGKILL)  # whatever the rank left in its group
        record.process.release()
        self._send({"op": protocol.EXITED, "rank": record.rank, "status": status})

    # -- the daemons this one starts ----------------------------------------------------------

    def _start_children(self) -> None:
        for tree in self.info.tree.children:
            child_info = self.info.for_child(tree, self._launcher_host)
            try:
                process = agent.start_daemon(child_info, tree.name)
            except OSError as error:
                self._send_lost_child(
                    tree, f"cannot start the remote shell to {tree.name}: {error}"
                )
                continue
            pidfd = os.pidfd_open(process.pid)
            self._children[pidfd] = _Child(tree, process, pidfd)
            self._loop.add_reader(pidfd, self._on_child_exit)

    def _on_child_exit(self, fd: int) -> None:
        child = self._children.pop(fd)
        self._loop.remove_reader(fd)
        os.close(fd)
        child.process.wait()
        self._send_lost_child(child.tree, agent.describe_failure(child.process, child.tree.name))

    def _send_lost_child(self, tree: protocol.NodeTree, message: str) -> None:
        self._send({"op": protocol.LOST_CHILD, "node": tree.node, "message": message})

    # -- signals and the end ------------------------------------------------------------------

    def _record_signal(self, signum: int, _frame: Any) -> None:
        self._signals.append(signum)

    def _handle_signals(self) -> None:
        if self._signals:
            name = signal.Signals(self._signals[0]).name
            self._finish(f"received {name}; its ranks were killed", 128 + self._signals[0])

    def _shut_down(self) -> None:
        """Kill and reap every rank, flush to the launcher, end the children, clean up."""
        for record in self._ranks.values():
            if record.status is None:
                record.process.signal(signal.SIGKILL)
        deadline = time.monotonic() + 5
        for record in self._ranks.values():
            while record.status is None and time.monotonic() < deadline:
                status = record.process.poll()
                if status is not None:
                    record.status = status
                    self._send({"op": protocol.EXITED, "rank": record.rank, "status": status})
                else:
                    time.sleep(0.01)
            record.process.release()
            if record.stdin_fd is not None:
                self._loop.remove_writer(record.stdin_fd)
            for fd in (*record.outputs, record.stdin_fd):
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            record.outputs.clear()
            record.stdin_fd = None
        self._starter.close()
        if self._relay is not None:
            self._relay.close()
        self._end_children()
        if self._sock is not None:
            self._sock.setblocking(True)
            with contextlib.suppress(OSError):
                self._sock.settimeout(5)
                self._sock.sendall(self._outbox)
            self._sock.close()
            self._sock = None
        if self._session is not None:
            shutil.rmtree(self._session, ignore_errors=True)
        if self._jobid is not None:
            from ompy.orte.launcher.session import SHM_DIR, shm_prefix

            for segment in SHM_DIR.glob(shm_prefix(self._jobid) + "*"):
                with contextlib.suppress(OSError):
                    segment.unlink()

    def _end_children(self) -> None:
        children = list(self._children.values())
        self._children.clear()
        for child in children:  # their stdin's end-of-file tells them to stop
            with contextlib.suppress(OSError):
                assert child.process.stdin is not None
                child.process.stdin.close()
        deadline = time.monotonic() + CHILD_GRACE
        for child in children:
            try:
                child.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.process.pid, signal.SIGKILL)
                child.process.wait()
            os.close(child.pidfd)
