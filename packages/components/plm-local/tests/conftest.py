"""Fixtures of the plm-local tests: a launcher that records what it started, and the checks
that every test leaves no process, no unreaped rank and no open file descriptor behind.

Every process a test starts carries a marker variable in its environment (children inherit
it), so a scan of ``/proc`` finds whatever survived, however deep it was in the tree.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from ompy.mca.plm.local.launcher import LocalPlmModule, LocalRank
from ompy.opal.readiness import readable
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import Stdio

MARKER = "OMPY_PLM_LOCAL_TEST"
#: Upper bound for anything a test waits for (process start, exit, output).
WAIT = 10.0


def marked_processes(token: str) -> list[int]:
    """Pids of live processes (zombies have no environment) that carry ``MARKER=token``."""
    needle = f"{MARKER}={token}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:  # gone meanwhile, or not ours
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry))
    return found


def placement(rank: int, size: int = 4) -> Placement:
    return Placement(rank, Node("localhost", size), 0, rank, size, False)


def python(code: str) -> list[str]:
    """The argv of a plain Python program (no ompy involved)."""
    return [sys.executable, "-c", code]


def wait_exit(rank: LocalRank, timeout: float = WAIT) -> int:
    """Wait on the rank's exit fd, as the launcher's loop does, and return its exit status."""
    fd = rank.exit_fd()
    assert fd is not None, "this kernel gives pidfds: the launcher must not have to poll"
    ready = readable([fd], timeout)
    assert ready, f"rank {rank.rank} (pid {rank.pid}) did not exit within {timeout} s"
    status = rank.poll()
    assert status is not None, "the exit fd was readable but the rank had not exited"
    return status


def exited(pid_fd: int, timeout: float) -> bool:
    """Whether the process behind ``pid_fd`` ends within ``timeout`` seconds."""
    ready = readable([pid_fd], timeout)
    return bool(ready)


def read_line(fd: int, timeout: float = WAIT) -> str:
    """One line from a pipe, without needing its end-of-file (grandchildren may hold it)."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        ready = readable([fd], max(remaining, 0))
        assert ready, f"no complete line within {timeout} s (got {data!r})"
        chunk = os.read(fd, 1)
        assert chunk, f"end of file before a complete line (got {data!r})"
        data += chunk
    return data.decode()


class Spawner:
    """Starts ranks through a :class:`LocalPlmModule` and remembers them for the final checks."""

    def __init__(self, token: str) -> None:
        self.launcher = LocalPlmModule()
        self.token = token
        self.ranks: list[LocalRank] = []

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {MARKER: self.token, **(extra or {})}

    def spawn(
        self,
        argv: Sequence[str],
        *,
        rank: int = 0,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        stdout: int | None = subprocess.DEVNULL,
    ) -> LocalRank:
        """Start ``argv`` as ``rank``; its stdin and stderr are ``/dev/null``."""
        started = self.launcher.spawn(
            placement(rank),
            argv,
            self.env(env),
            cwd or Path.cwd(),
            Stdio(subprocess.DEVNULL, stdout, subprocess.DEVNULL),
        )
        self.ranks.append(started)
        return started

    def spawn_reporting(self, code: str, **kwargs) -> tuple[LocalRank, int]:
        """Start ``python -c code`` with its stdout on a pipe; returns the rank and the read end."""
        read_end, write_end = os.pipe()
        try:
            started = self.spawn(python(code), stdout=write_end, **kwargs)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        return started, read_end


@pytest.fixture
def token() -> str:
    return secrets.token_hex(8)


@pytest.fixture
def spawner(token: str) -> Iterator[Spawner]:
    """A launcher; afterwards every rank must be reaped and no marked process may be alive."""
    spawner = Spawner(token)
    yield spawner
    unreaped = [r.pid for r in spawner.ranks if r.poll() is None]
    survivors = marked_processes(token)
    deadline = time.monotonic() + 2.0  # a process killed a moment ago may still be exiting
    while survivors and time.monotonic() < deadline:
        time.sleep(0.05)
        survivors = marked_processes(token)
    for pid in survivors:  # clean up before failing, so one failure does not cascade
        os.kill(pid, signal.SIGKILL)
    for started in spawner.ranks:
        if started.poll() is None:
            os.killpg(started.pid, signal.SIGKILL)
            os.waitpid(started.pid, 0)
        started.release()
    assert not unreaped, f"the test left ranks running or unreaped: {unreaped}"
    assert not survivors, f"the test left processes behind: {survivors}"


@pytest.fixture(autouse=True)
def no_leaked_fds() -> Iterator[None]:
    before = len(os.listdir("/proc/self/fd"))
    yield
    assert len(os.listdir("/proc/self/fd")) <= before, "file descriptors leaked"
