"""The launcher's side of the fork server: start it, ask it for ranks, learn their exits.

The server (:mod:`.zygote`) is the launcher's child, in its own session, killed by the kernel
when the launcher dies; the ranks are the server's children, killed when it dies.  So a
SIGKILL to the launcher still leaves nothing running.

A forked rank is not the launcher's child, so the launcher cannot wait for it: the server
reports each exit status through a pipe made for that rank (its read end is the rank's exit
descriptor in the launcher's event loop).  If the server dies, the pipe reaches end-of-file;
the kernel has then killed the rank with SIGKILL, and the launcher reports the server's death
(:meth:`ForkServerClient.death`) as the cause.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from . import wire
from .deathsig import Prctl, preexec_die_with_parent
from .pycommand import PythonCommand

if TYPE_CHECKING:
    from ompy.orte.mca.plm import StarterFailure, Stdio

    from .ranks import ForkedRank

#: How long the first rank waits for the server's preloading before the job falls back to
#: fork/exec (a preload entry that hangs must not hang the job).
READY_TIMEOUT = 60.0
#: How long the server may take to exit once the launcher hangs up.
EXIT_TIMEOUT = 5.0
MCA_PREFIX = "OMPY_MCA_"
_BOOT = "from ompy.orte.launcher.forkserver.zygote import main; main()"


class ForkServerUnavailableError(Exception):
    """The server died or did not get ready: start ranks with fork/exec instead."""


def environment_fits(server_env: Mapping[str, str], rank_env: Mapping[str, str]) -> bool:
    """Whether a server started with ``server_env`` can fork a rank that needs ``rank_env``.

    The child gets ``rank_env`` in full; what must agree is what the server's interpreter
    and its preloaded modules read at start-up.  So the rank's identity variables, the MCA
    parameters (``OMPY_MCA_*``, read when frameworks open, never at import: the preload
    contract) and the binding policy (read by the rank's starter) may differ; every other
    variable must be equal.
    """
    from ompy.orte.control.environment import ALL_VARIABLES, BINDING

    def common(env: Mapping[str, str]) -> dict[str, str]:
        return {
            name: value
            for name, value in env.items()
            if name not in ALL_VARIABLES and name != BINDING and not name.startswith(MCA_PREFIX)
        }

    return common(server_env) == common(rank_env)


class ForkServerClient:
    """One job's fork server: what it runs, with which environment, and the connection."""

    def __init__(
        self,
        command: PythonCommand,
        env: Mapping[str, str],
        cwd: Path,
        prctl: Prctl | None,
        *,
        fork: bool = False,
    ) -> None:
        """Start the server: a new interpreter, or with ``fork`` this process forked.

        Forking saves the new interpreter's start (35-45 ms before it can import anything)
        but is sound only at the ``ompy`` executable's first instruction: one thread, nothing
        imported that a rank's interpreter would not have, and only when this interpreter,
        with no options and this very environment, is the one the job runs (else: exec).
        """
        self.command = command
        self.env = dict(env)
        self.cwd = cwd
        self._connection, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._process: subprocess.Popen | _ForkedServer | None
        try:
            if fork and self._can_fork():
                self._process = _ForkedServer(theirs.fileno(), cwd, prctl)
            else:
                self._process = subprocess.Popen(
                    [command.executable, *command.options, "-c", _BOOT, str(theirs.fileno())],
                    env=self.env,
                    cwd=cwd,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    pass_fds=(theirs.fileno(),),
                    start_new_session=True,
                    preexec_fn=preexec_die_with_parent(os.getpid(), prctl),  # noqa: PLW1509
                )
        except OSError:
            self._connection.close()
            raise
        finally:
            theirs.close()
        self._ready = False
        assert self._process is not None
        #: The server process, kept after :meth:`close` to tell how it ended.
        self._server_process = self._process
        self.pid = self._process.pid

    def _can_fork(self) -> bool:
        import threading

        return (
            threading.active_count() == 1
            # a stream closed at the launcher's start is None here, not /dev/null as executed
            and None not in (sys.stdin, sys.stdout, sys.stderr)
            and not self.command.options
            and os.path.realpath(self.command.executable) == os.path.realpath(sys.executable)
            and self.env == dict(os.environ)
        )

    def spawn(
        self,
        rank: int,
        env: Mapping[str, str],
        stdio: Stdio,
        cpus: frozenset[int] | None = None,
    ) -> ForkedRank:
        """Have the server fork ``rank``, bound to ``cpus`` (None: as the server runs);
        :class:`ForkServerUnavailableError` if it cannot."""
        self._wait_ready()
        status_r, status_w = os.pipe()
        opened: list[int] = [status_w]
        try:
            fds = [self._stdio_fd(stdio.stdin, 0, opened), self._stdio_fd(stdio.stdout, 1, opened)]
            fds.append(self._stdio_fd(stdio.stderr, 2, opened))
            body = {
                "cwd": str(self.cwd),
                "env": dict(env),
                "cpus": None if cpus is None else sorted(cpus),
                "command": {
                    "executable": self.command.executable,
                    "options": self.command.options,
                    "kind": self.command.kind,
                    "target": self.command.target,
                    "args": self.command.args,
                },
            }
            wire.send(self._connection, ("spawn", body), [*fds, status_w])
            reply = self._receive()
        except OSError as error:  # a descriptor that cannot be passed, a server gone
            os.close(status_r)
            self.close()
            raise ForkServerUnavailableError(
                f"the fork server could not start rank {rank}: {error}"
            ) from None
        except BaseException:
            os.close(status_r)
            raise
        finally:
            for fd in opened:
                os.close(fd)
        kind, value = reply
        if kind != "spawned":
            os.close(status_r)
            raise ForkServerUnavailableError(
                f"the fork server could not start rank {rank}: {value}"
            )
        os.set_blocking(status_r, False)
        from .ranks import ForkedRank  # the plm interface: loaded when a rank is forked

        return ForkedRank(rank, value, status_r, self)

    @staticmethod
    def can_pass(stdio: Stdio) -> bool:
        """Whether the server can give a rank these streams as fork/exec would.

        A stream the rank inherits (``None``) is the launcher's descriptor 0, 1 or 2, which an
        executed rank gets only if it is open and inheritable (otherwise it starts with that
        descriptor closed, which a forked rank cannot mimic).
        """
        for target, inherited in ((stdio.stdin, 0), (stdio.stdout, 1), (stdio.stderr, 2)):
            if target is None:
                try:
                    if not os.get_inheritable(inherited):
                        return False
                except OSError:
                    return False
        return True

    @staticmethod
    def _stdio_fd(target: int | None, inherited: int, opened: list[int]) -> int:
        if target is None:
            return inherited
        if target == subprocess.DEVNULL:
            fd = os.open(os.devnull, os.O_RDONLY if inherited == 0 else os.O_WRONLY)
            opened.append(fd)
            return fd
        if target < 0:
            raise ForkServerUnavailableError(f"stdio target {target} is not a descriptor")
        return target

    def _wait_ready(self) -> None:
        if self._ready:
            return
        self._connection.settimeout(READY_TIMEOUT)
        try:
            kind, _value = self._receive()
        except (TimeoutError, OSError) as error:
            self.close()
            raise ForkServerUnavailableError(
                f"the fork server did not get ready: {error}"
            ) from None
        finally:
            if self._process is not None:
                self._connection.settimeout(None)
        if kind != "ready":
            self.close()
            raise ForkServerUnavailableError(f"the fork server sent {kind!r} instead of 'ready'")
        self._ready = True

    def _receive(self) -> tuple[str, object]:
        received = wire.receive(self._connection)
        if received is None:
            self.close()
            raise ForkServerUnavailableError("the fork server exited")
        message, fds = received
        for fd in fds:
            os.close(fd)
        return message

    def death(self, wait: float = 1.0) -> StarterFailure:
        """How the server ended, once a status pipe closed without a status (it is gone).

        It may take a moment for the dead server to become reapable: wait up to ``wait``
        seconds for its exit status.
        """
        from ompy.orte.mca.errmgr.base import describe_status, exit_code_of
        from ompy.orte.mca.plm import StarterFailure

        process = self._server_process
        deadline = time.monotonic() + wait
        status = process.poll()
        while status is None and time.monotonic() < deadline:
            time.sleep(0.01)
            status = process.poll()
        what = f"the fork server (pid {self.pid}) that started the ranks"
        if status is None:
            return StarterFailure(f"{what} stopped reporting their exits", 1)
        code = exit_code_of(status) or 1
        return StarterFailure(f"{what} {describe_status(status)}, and the ranks died with it", code)

    def close(self) -> None:
        """Hang up and reap the server (which kills any rank it still has)."""
        process, self._process = self._process, None
        if process is None:
            return
        self._connection.close()
        try:
            process.wait(EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _ForkedServer:
    """A fork server forked from this process (no exec), with the ``Popen`` calls ``close`` uses.

    The child does what ``Popen`` does for the executed server (new session, death signal,
    standard input and output on ``/dev/null``, only the server's socket kept open, the job's
    working directory), drops the ``ompy`` script's directory from ``sys.path`` as ``-c``
    would not have it, and never returns into the launcher's code.
    """

    def __init__(self, fd: int, cwd: Path, prctl: Prctl | None) -> None:
        from .deathsig import die_with_parent

        parent = os.getpid()
        self.returncode: int | None = None
        self.pid = os.fork()
        if self.pid:
            return
        try:  # the child
            os.setsid()
            die_with_parent(parent, prctl)
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.closerange(3, fd)
            os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
            os.chdir(cwd)
            if not sys.flags.safe_path and sys.path:
                del sys.path[0]  # the ompy script's directory
            sys.argv = ["-c"]
            from .zygote import serve_on

            serve_on(fd)
        finally:
            os._exit(70)

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.0005
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(["ompy fork server"], timeout or 0.0)
            time.sleep(pause)
            pause = min(pause * 2, 0.02)
        return self.returncode  # type: ignore[return-value]

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
