"""The launcher's side of the fork server: start it, ask it for ranks, learn their exits.

The server (:mod:`.zygote`) is the launcher's child, in its own session, killed by the kernel
when the launcher dies; the ranks are the server's children, killed when it dies.  So a
SIGKILL to the launcher still leaves nothing running.

A forked rank is not the launcher's child, so the launcher cannot wait for it: the server
reports each exit status through a pipe made for that rank (its read end is the rank's exit
descriptor in the launcher's event loop).  If the server dies, the pipe reaches end-of-file;
the kernel has then killed the rank with SIGKILL, which is what the launcher reports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path

from ompy.orte.mca.plm import RankProcess, Stdio

from . import wire
from .deathsig import Prctl, preexec_die_with_parent
from .pycommand import PythonCommand

#: How long the first rank waits for the server's preloading before the job falls back to
#: fork/exec (a preload entry that hangs must not hang the job).
READY_TIMEOUT = 60.0
#: How long the server may take to exit once the launcher hangs up.
EXIT_TIMEOUT = 5.0
_BOOT = "from ompy.mca.plm.local.zygote import main; main()"


class ForkServerUnavailableError(Exception):
    """The server died or did not get ready: start ranks with fork/exec instead."""


class ForkedRank(RankProcess):
    """A rank forked by the server; its exit status arrives through its status pipe."""

    def __init__(self, rank: int, pid: int, status_fd: int) -> None:
        self.rank = rank
        self.pid = pid
        self._status_fd: int | None = status_fd
        self._returncode: int | None = None

    def exit_fd(self) -> int | None:
        return self._status_fd

    def poll(self) -> int | None:
        if self._returncode is None and self._status_fd is not None:
            try:
                data = os.read(self._status_fd, wire.STATUS.size)
            except BlockingIOError:
                return None
            if len(data) == wire.STATUS.size:
                (self._returncode,) = wire.STATUS.unpack(data)
            else:  # the server died without reporting: its death signal killed the rank
                self._returncode = -signal.SIGKILL
        return self._returncode

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def release(self) -> None:
        if self._status_fd is not None:
            os.close(self._status_fd)
            self._status_fd = None


class ForkServerClient:
    """One job's fork server: what it runs, with which environment, and the connection."""

    def __init__(
        self, command: PythonCommand, env: Mapping[str, str], cwd: Path, prctl: Prctl | None
    ) -> None:
        self.command = command
        self.env = dict(env)
        self.cwd = cwd
        self._connection, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._process: subprocess.Popen | None = subprocess.Popen(
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

    def spawn(self, rank: int, env: Mapping[str, str], stdio: Stdio) -> ForkedRank:
        """Have the server fork ``rank``; :class:`ForkServerUnavailableError` if it cannot."""
        self._wait_ready()
        status_r, status_w = os.pipe()
        opened: list[int] = [status_w]
        try:
            fds = [self._stdio_fd(stdio.stdin, 0, opened), self._stdio_fd(stdio.stdout, 1, opened)]
            fds.append(self._stdio_fd(stdio.stderr, 2, opened))
            body = {
                "cwd": str(self.cwd),
                "env": dict(env),
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
        return ForkedRank(rank, value, status_r)

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
