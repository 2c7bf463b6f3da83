"""Fixtures of the iof-default tests: an event loop, fake ranks that are just the write ends of
the pipes the forwarder creates, and the check that no file descriptor is left open."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from ompy.mca.iof.default.forwarder import DefaultIofModule
from ompy.opal.eventloop import EventLoop
from ompy.orte.mca.iof import IofOptions

WAIT = 10.0


@attrs.define
class FakeRank:
    """What a started rank holds: the write ends of its stdout and stderr pipes.

    A real rank runs concurrently with the launcher; this one writes without blocking and,
    when its pipe is full, lets the launcher's loop run (as the launcher would meanwhile).
    """

    rank: int
    stdout: int
    stderr: int
    loop: EventLoop

    def write(self, data: bytes, stream: str = "stdout") -> None:
        fd = self.stdout if stream == "stdout" else self.stderr
        view = memoryview(data)
        deadline = time.monotonic() + WAIT
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                assert time.monotonic() < deadline, "the forwarder stopped reading"
                self.loop.run_once(0.1)

    def exit(self) -> None:
        for fd in (self.stdout, self.stderr):
            if fd >= 0:
                os.close(fd)
        self.stdout = self.stderr = -1


def start(iof: DefaultIofModule, loop: EventLoop, size: int) -> list[FakeRank]:
    """Let the forwarder set up ``size`` ranks; each keeps (a copy of) the child's write ends."""
    ranks = []
    for rank in range(size):
        stdio = iof.stdio_for(rank)
        assert stdio.stdout is not None and stdio.stderr is not None
        fake = FakeRank(rank, os.dup(stdio.stdout), os.dup(stdio.stderr), loop)
        os.set_blocking(fake.stdout, False)
        os.set_blocking(fake.stderr, False)
        ranks.append(fake)
        iof.started(rank, loop)  # closes the forwarder's copies of the child's ends
    return ranks


def pump(iof: DefaultIofModule, loop: EventLoop, timeout: float = WAIT) -> None:
    """Run the loop until every stream reached end-of-file, then close the forwarder."""
    deadline = time.monotonic() + timeout
    while iof.open_streams():
        assert time.monotonic() < deadline, f"{iof.open_streams()} streams still open"
        loop.run_once(0.5)
    iof.close(loop)


@attrs.define
class Terminal:
    """Stand-ins for the launcher's stdout and stderr: regular files, which never block."""

    directory: Path
    stdout_fd: int = -1
    stderr_fd: int = -1

    def __attrs_post_init__(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
        self.stdout_fd = os.open(self.directory / "terminal.out", flags, 0o644)
        self.stderr_fd = os.open(self.directory / "terminal.err", flags, 0o644)

    def options(self, jobid: str = "j1", size: int = 1, **kwargs) -> IofOptions:
        return IofOptions(jobid, size, stdout_fd=self.stdout_fd, stderr_fd=self.stderr_fd, **kwargs)

    def out(self) -> bytes:
        return (self.directory / "terminal.out").read_bytes()

    def err(self) -> bytes:
        return (self.directory / "terminal.err").read_bytes()

    def close(self) -> None:
        os.close(self.stdout_fd)
        os.close(self.stderr_fd)


@pytest.fixture
def loop() -> Iterator[EventLoop]:
    loop = EventLoop()
    yield loop
    loop.close()


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    terminal = Terminal(tmp_path)
    yield terminal
    terminal.close()


@pytest.fixture(autouse=True)
def no_leaked_fds() -> Iterator[None]:
    before = len(os.listdir("/proc/self/fd"))
    yield
    assert len(os.listdir("/proc/self/fd")) <= before, "file descriptors leaked"
