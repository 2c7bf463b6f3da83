"""Starting ranks on this host: one child process per rank, in its own session.

* Each rank is the leader of a new session (``setsid``) and thus of its own process group, so
  a signal sent to the group reaches whatever the rank started, and a Ctrl-C in the launcher's
  terminal reaches only the launcher, which then tears the job down in order.
* Each rank asks the kernel for SIGKILL when the launcher dies (``PR_SET_PDEATHSIG``), so ranks
  that never talk to the launcher (programs that are not ompy programs) cannot outlive a
  launcher killed with SIGKILL either.  The kernel sends it when the *thread* that forked the
  rank ends, so ranks must be spawned from the launcher's main thread.
* Exit is observed through a pidfd, a file descriptor that becomes readable when the process
  ends, so the launcher's event loop waits for exits and output alike.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ompy.orte.launcher.binding import NodeBinding
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.forkserver.client import (
    ForkServerClient,
    ForkServerUnavailableError,
    environment_fits,
)
from ompy.orte.launcher.forkserver.deathsig import load_prctl, preexec_die_with_parent
from ompy.orte.launcher.forkserver.early import take_early
from ompy.orte.launcher.forkserver.pycommand import classify
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import PlmModule, RankProcess, Stdio


def _launch_error(rank: int, argv: Sequence[str], cwd: Path, error: OSError) -> LaunchError:
    """Say what kept ``rank`` from starting, with the shell's code (127 missing, 126 not runnable).

    The kernel's answers are ambiguous: "no such file" naming a script that exists means its
    interpreter is missing, and a failed ``chdir`` is reported under the directory's name.
    """
    if error.filename is not None and str(error.filename) == str(cwd):
        return LaunchError(
            f"cannot start rank {rank} in its working directory '{cwd}': {error.strerror}"
        )
    if isinstance(error, FileNotFoundError):
        program = str(error.filename or "")
        if "/" in program and (cwd / program).is_file():  # relative names run from cwd
            return LaunchError(
                f"cannot start rank {rank}: '{argv[0]}' exists, but the interpreter named on "
                f"its '#!' line (or the loader it needs) does not",
                127,
            )
        return LaunchError(f"cannot start rank {rank}: {error}", 127)
    if isinstance(error, PermissionError):
        return LaunchError(f"cannot start rank {rank}: {error}", 126)
    if error.errno == errno.ENOEXEC:
        return LaunchError(
            f"cannot start rank {rank}: '{argv[0]}' is not a program this system can execute "
            f"(a script needs a '#!' line)",
            126,
        )
    return LaunchError(f"cannot start rank {rank}: {error}")


class LocalRank(RankProcess):
    """A rank started by :class:`LocalPlmModule`."""

    def __init__(self, rank: int, popen: subprocess.Popen) -> None:
        self.rank = rank
        self.pid = popen.pid
        self._popen = popen
        try:
            self._pidfd: int | None = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):  # old kernel: the launcher polls instead
            self._pidfd = None

    def exit_fd(self) -> int | None:
        return self._pidfd

    def poll(self) -> int | None:
        return self._popen.poll()

    def signal(self, signum: int) -> None:
        # The group outlives its leader while any member is alive, so this also reaches the
        # children of a rank that has already exited.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def release(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


class LocalPlmModule(PlmModule):
    """The plm module of the ``local`` component.

    With ``fork_server`` on, a job whose program is this interpreter in a plain form (see
    :mod:`ompy.orte.launcher.forkserver.pycommand`) gets a fork server in :meth:`prepare` (the
    one the executable started on a guess, if it fits), and its ranks are forked from there;
    every other rank, and every rank after the server failed, is started with fork/exec.
    """

    def __init__(self, fork_server: bool = True) -> None:
        self._prctl = load_prctl()
        self._fork_server_wanted = fork_server
        self._server: ForkServerClient | None = None
        self._server_argv: tuple[str, ...] = ()
        self._binding = NodeBinding()

    @property
    def fork_server(self) -> ForkServerClient | None:
        """The running fork server of the current job, if it has one."""
        return self._server

    def prepare(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        if not self._fork_server_wanted or self._server is not None:
            return
        command = classify(argv, cwd)
        if command is None:
            return
        # The executable may have started it already, guessing from the command line.
        self._server = take_early(command, env, cwd)
        if self._server is None:
            try:
                self._server = ForkServerClient(command, env, cwd, self._prctl)
            except OSError:
                return  # cannot even start it: the ranks are executed, which reports problems
        self._server_argv = tuple(argv)

    def finish(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()

    def check_nodes(self, nodes: Sequence[Node]) -> None:
        remote = [node.name for node in nodes if not is_local_host(node.name)]
        if remote:
            raise LaunchError(
                f"cannot start ranks on {', '.join(repr(name) for name in remote)}: the local "
                f"launcher (plm 'local') starts ranks on this host only, and no remote launcher "
                f"(ssh, slurm) is installed yet; use localhost, 127.0.0.1 or this host's name"
            )

    def spawn(
        self,
        placement: Placement,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        stdio: Stdio,
    ) -> RankProcess:
        cpus = self._binding.cpus(env)
        server = self._server
        if server is not None and self._fits(server, argv, env, cwd) and server.can_pass(stdio):
            try:
                return server.spawn(placement.rank, env, stdio, cpus)
            except ForkServerUnavailableError:
                self.finish()  # every later rank is executed
        try:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=stdio.stdin,
                stdout=stdio.stdout,
                stderr=stdio.stderr,
                start_new_session=True,
                # Safe with the control server thread running: the hook only calls prctl,
                # getppid and _exit (no locks, no imports; ctypes and prctl are resolved here).
                preexec_fn=preexec_die_with_parent(os.getpid(), self._prctl, cpus),  # noqa: PLW1509
            )
        except OSError as error:
            raise _launch_error(placement.rank, argv, cwd, error) from None
        return LocalRank(placement.rank, popen)

    def _fits(
        self, server: ForkServerClient, argv: Sequence[str], env: Mapping[str, str], cwd: Path
    ) -> bool:
        """Whether the server runs exactly this rank: same program and directory, and the
        same environment as far as the server's interpreter read it at start-up."""
        if tuple(argv) != self._server_argv or cwd != server.cwd:
            return False
        return environment_fits(server.env, env)
