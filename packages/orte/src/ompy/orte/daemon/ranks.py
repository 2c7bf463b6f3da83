"""Starting a node's ranks: forked from a fork server when they run Python, else executed.

The daemon starts ranks as ``plm local`` does on the launcher's host: a rank that runs this
interpreter in a plain form (``python app.py``, ``-m``, ``-c``; see
:mod:`ompy.orte.launcher.forkserver.pycommand`) is forked from the node's fork server, which
imported what ranks need once; any other program, and every rank once the server failed, is
executed.  Either way the daemon gets a :class:`~ompy.orte.mca.plm.RankProcess`: a pid that
leads its own session, an exit descriptor for its event loop, signals to the process group.
Ranks die with the daemon (``PR_SET_PDEATHSIG``, directly or through the fork server).
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ompy.orte.launcher.binding import NodeBinding
from ompy.orte.launcher.forkserver.client import (
    ForkServerClient,
    ForkServerUnavailableError,
    environment_fits,
)
from ompy.orte.launcher.forkserver.deathsig import load_prctl, preexec_die_with_parent
from ompy.orte.launcher.forkserver.pycommand import classify
from ompy.orte.mca.plm import RankProcess, Stdio


class SpawnError(Exception):
    """A rank could not be started; ``code`` is the shell's (127 not found, 126 not runnable)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def spawn_error(rank: int, host: str, argv: Sequence[str], cwd: str, error: OSError) -> SpawnError:
    """What kept ``rank`` from starting, with the shell's code."""
    where = f"cannot start rank {rank} on {host}"
    if error.filename is not None and str(error.filename) == cwd:
        return SpawnError(f"{where} in its working directory '{cwd}': {error.strerror}", 1)
    if isinstance(error, FileNotFoundError):
        return SpawnError(f"{where}: '{argv[0]}' was not found ({error.strerror})", 127)
    if isinstance(error, PermissionError):
        return SpawnError(f"{where}: {error}", 126)
    if error.errno == errno.ENOEXEC:
        return SpawnError(f"{where}: '{argv[0]}' is not a program this system can execute", 126)
    return SpawnError(f"{where}: {error}", 1)


class ExecutedRank(RankProcess):
    """A rank the daemon executed itself; its exit is seen through a pidfd."""

    def __init__(self, rank: int, popen: subprocess.Popen[bytes]) -> None:
        self.rank = rank
        self.pid = popen.pid
        self._popen = popen
        try:
            self._pidfd: int | None = os.pidfd_open(popen.pid)
        except OSError:  # old kernel: the daemon polls
            self._pidfd = None

    def exit_fd(self) -> int | None:
        return self._pidfd

    def poll(self) -> int | None:
        return self._popen.poll()

    def signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def release(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class RankStarter:
    """Starts the ranks of one node (see the module documentation)."""

    def __init__(self, host: str, *, fork_server: bool = True) -> None:
        self.host = host
        self._prctl = load_prctl()
        self._fork_server_wanted = fork_server
        self._server: ForkServerClient | None = None
        self._server_argv: tuple[str, ...] = ()
        self._binding = NodeBinding()

    def start(
        self, rank: int, argv: Sequence[str], env: Mapping[str, str], cwd: str, stdio: Stdio
    ) -> RankProcess:
        """Start ``rank``; :class:`SpawnError` says why it could not."""
        cpus = self._binding.cpus(env)
        server = self._fork_server(argv, env, cwd)
        if server is not None and server.can_pass(stdio):
            try:
                return server.spawn(rank, env, stdio, cpus)
            except ForkServerUnavailableError:
                self.close()  # every later rank is executed
        try:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=stdio.stdin,
                stdout=stdio.stdout,
                stderr=stdio.stderr,
                start_new_session=True,
                preexec_fn=preexec_die_with_parent(os.getpid(), self._prctl, cpus),  # noqa: PLW1509
            )
        except OSError as error:
            raise spawn_error(rank, self.host, argv, cwd, error) from None
        return ExecutedRank(rank, popen)

    def adopt(self, server: ForkServerClient, argv: Sequence[str]) -> None:
        """Fork the ranks that run ``argv`` from ``server``, started elsewhere for exactly that
        program (the ``ompy`` executable's early server, when the launcher serves its own
        node); it is this starter's from now on."""
        self.close()
        self._server, self._server_argv = server, tuple(argv)

    def warm(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> None:
        """Start the fork server for ranks that will run ``argv`` in ``cwd`` with ``env``
        (less their identity), before the first of them is asked for: its imports then
        overlap the launcher's work on other nodes.  A rank that turns out not to fit it is
        executed, as it would be without a server."""
        self._fork_server(argv, env, cwd)

    def _fork_server(
        self, argv: Sequence[str], env: Mapping[str, str], cwd: str
    ) -> ForkServerClient | None:
        """The node's fork server if it runs exactly this rank (started for the first)."""
        if not self._fork_server_wanted:
            return None
        if self._server is None and not self._server_argv:
            command = classify(argv, Path(cwd))
            self._server_argv = tuple(argv)  # tried once, whatever happens
            if command is None:
                return None
            try:
                self._server = ForkServerClient(command, env, Path(cwd), self._prctl)
            except OSError:
                return None
        server = self._server
        if server is None or tuple(argv) != self._server_argv or Path(cwd) != server.cwd:
            return None
        return server if environment_fits(server.env, env) else None

    def close(self) -> None:
        """Stop the fork server (its ranks, if any are left, die with it)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
