"""The fork server ("zygote"): one warm interpreter that forks every rank of a Python job.

Started by the launcher (see :mod:`.forkserver`) with the rank's interpreter, options, working
directory and common environment, it runs the installed ``ompy.preload`` entries (the layers
import what their ranks will need, without initializing anything), says ``ready``, and then
forks one child per ``spawn`` request.  Each child:

* becomes the leader of a new session and asks for SIGKILL when the fork server dies (which
  itself dies with the launcher), exactly as executed ranks do with the launcher;
* takes the three standard streams passed with the request, the request's working directory
  and environment (the server's own, plus the rank's identity variables), the signal
  dispositions of a fresh interpreter, and closes every descriptor of the server;
* runs the program with :func:`.rankmain.run_as_main`.

The server reaps its children and writes each exit status (``waitstatus_to_exitcode``, a
4-byte signed integer) to the status pipe that came with the request, then closes it.  It
stays single-threaded, so forking is safe.  When the launcher closes the connection it kills
whatever children remain and exits.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

from ompy.opal.binding import bind
from ompy.opal.eventloop import EventLoop

from . import wire
from .deathsig import die_with_parent, load_prctl
from .pycommand import PythonCommand


class ForkServer:
    """The server's state: the launcher connection, the event loop, the live children.

    The loop watches the connection, and catches signals: SIGCHLD wakes it to reap.
    """

    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.pid = os.getpid()
        self.prctl = load_prctl()
        #: pid of each live child -> the write end of its status pipe.
        self.children: dict[int, int] = {}
        self._loop = EventLoop()
        self._loop.catch_signals()
        signal.signal(signal.SIGCHLD, _ignore)
        self._hung_up = False

    def serve(self) -> None:
        """Answer spawn requests and report exits until the launcher hangs up."""
        self._loop.add_reader(self.connection, self._on_request)
        try:
            while not self._hung_up:
                self._loop.run_once()
                self._reap()
        finally:
            self._loop.close()
            self._kill_children()

    def _on_request(self, _fd: int) -> None:
        received = wire.receive(self.connection)
        if received is None:
            self._hung_up = True
            return
        self._handle(*received)

    # -- requests ------------------------------------------------------------------------------

    def _handle(self, message: Any, fds: list[int]) -> None:
        kind, body = message
        if kind != "spawn" or len(fds) != 4:
            for fd in fds:
                os.close(fd)
            wire.send(self.connection, ("error", f"malformed request {kind!r} with {len(fds)} fds"))
            return
        stdin, stdout, stderr, status = fds
        for stream in (sys.stdout, sys.stderr):  # nothing buffered may be written twice
            if stream is not None:
                stream.flush()
        try:
            pid = os.fork()
        except OSError as error:
            for fd in fds:
                os.close(fd)
            wire.send(self.connection, ("error", f"fork failed: {error}"))
            return
        if pid == 0:
            self._become_rank(body, (stdin, stdout, stderr), status)
        # Reported at once, before the child has its own session: the launcher's signals
        # fall back to the pid while the process group does not exist yet (see ranks.py).
        for fd in (stdin, stdout, stderr):
            os.close(fd)
        self.children[pid] = status
        wire.send(self.connection, ("spawned", pid))

    def _become_rank(
        self, body: dict[str, Any], stdio: tuple[int, int, int], status: int
    ) -> NoReturn:
        stdin, stdout, stderr = stdio
        try:
            os.setsid()
            die_with_parent(self.pid, self.prctl)
            if body["cpus"] is not None:  # before the program runs: its threads inherit it
                bind(0, frozenset(body["cpus"]))
            self._loop.close()  # the child's copies of the loop's descriptors
            signal.set_wakeup_fd(-1)  # as in a fresh interpreter
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            self.connection.close()
            for fd in (status, *self.children.values()):
                os.close(fd)
            for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
                os.dup2(fd, target)
            for fd in {stdin, stdout, stderr}:
                os.close(fd)
            os.chdir(body["cwd"])
            os.environ.clear()
            os.environ.update(body["env"])
            _adapt_std_streams()
            command = PythonCommand(**body["command"])
        except BaseException:
            with _suppress_all():
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(127)
        from .rankmain import run_as_main

        run_as_main(command)

    # -- exits ---------------------------------------------------------------------------------

    def _reap(self) -> None:
        while self.children:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            fd = self.children.pop(pid, None)
            if fd is not None:
                with _suppress_all():  # the launcher may have stopped listening
                    os.write(fd, wire.STATUS.pack(os.waitstatus_to_exitcode(wait_status)))
                os.close(fd)

    def _kill_children(self) -> None:
        for pid in list(self.children):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:  # not yet the leader of its session: only itself
                with _suppress_all():
                    os.kill(pid, signal.SIGKILL)
            except PermissionError:
                pass
        while self.children:
            try:
                pid, _ = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            fd = self.children.pop(pid, None)
            if fd is not None:
                os.close(fd)


def _adapt_std_streams() -> None:
    """Line buffering as a fresh interpreter would choose it for the new descriptors.

    Python buffers stdin and stdout by line when they are terminals, by block otherwise;
    under ``-u`` (``write_through``) the server's streams are already what a rank needs.
    """
    for stream, fd in ((sys.stdin, 0), (sys.stdout, 1)):
        if stream is not None and not getattr(stream, "write_through", False):
            with _suppress_all():
                stream.reconfigure(line_buffering=os.isatty(fd))


def _ignore(_signum: int, _frame: object) -> None:
    """SIGCHLD only needs to wake the loop, which the loop's wake-up descriptor does."""


class _suppress_all:  # noqa: N801 - used like contextlib.suppress
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def main() -> None:
    """Entry of the server process: ``-c "...main()" FD`` with FD the launcher's socket."""
    if not sys.flags.safe_path and sys.path and sys.path[0] == "":
        del sys.path[0]  # -c put the directory first; each rank gets its own sys.path[0]
    serve_on(int(sys.argv[1]))


def _preload_frozen(preload: Callable[[], list[str]]) -> list[str]:
    """Run ``preload`` without the cyclic garbage collector, then freeze what it made.

    Importing a rank's modules allocates some 40,000 long-lived objects and nearly no
    garbage, yet the collector would pass over the young ones about a hundred times (a few
    per cent of the preload, which is on every Python job's critical path).  Frozen
    (``gc.freeze``), those objects are left out of every later collection, in the server and
    in each forked rank, whose collections then neither scan them nor copy their pages.
    """
    gc.disable()
    try:
        return preload()
    finally:
        gc.freeze()
        gc.enable()


def serve_on(fd: int) -> NoReturn:
    """Preload, say ``ready`` on the launcher's socket ``fd``, serve until it hangs up, exit."""
    connection = socket.socket(fileno=fd)
    from ompy.opal import proctitle
    from ompy.orte.launcher.preload import run_preloads

    proctitle.set_title(f"ompy fork server of ompy run {os.getppid()}", name="ompy-forksrv")

    failures = _preload_frozen(run_preloads)
    if failures:
        from ompy.opal import output

        log = output.get_logger("orte")
        for failure in failures:
            log.warning("fork server: preloading %s", failure)
    server = ForkServer(connection)
    try:
        wire.send(connection, ("ready", os.getpid()))
        server.serve()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the launcher hung up (its job ended or failed before the first rank)
    # Everything the server had to do is done (its children are reaped); the interpreter's
    # teardown of numpy and ompy would only delay the launcher, which waits for this exit.
    for stream in (sys.stdout, sys.stderr):
        with _suppress_all():
            stream.flush()
    os._exit(0)
