"""The launcher's side of a plm whose daemons fork the ranks: one ``ompy daemon`` per node.

:class:`DaemonPlmModule` holds what does not depend on how the daemons get started (plm ssh
starts them through a remote shell, plm slurm with one ``srun`` step):

* :meth:`DaemonPlmModule.prepare` (before the launcher's remaining set-up, so the daemons
  start meanwhile) makes the launch secret and the :class:`~.daemons.DaemonServer`, one
  :class:`~.daemons.Daemon` record per node, and asks the subclass to start the daemons
  (:meth:`DaemonPlmModule.start_daemons`), handing it the launch record of each.
* :meth:`DaemonPlmModule.spawn` waits until the rank's node has reported in, asks its daemon
  to start the rank and waits for the answer: a started rank, or the reason it could not start
  (program not found: 127, ...).  Ranks on other hosts get the ``OMPY_`` variables and what
  the user forwarded (``-x``, ``--mca``); ranks on this host the launcher's whole environment.
* A lost daemon (its connection or its starting process ended, or its parent reported it gone)
  ends its ranks' lives as far as the launcher is concerned, and the job ends naming its host.
* :meth:`DaemonPlmModule.finish` tells every daemon to exit and waits for the processes that
  ran them.
"""

from __future__ import annotations

import abc
import os
import secrets
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ompy.orte.daemon.protocol import EXIT, SIGNAL, SPAWN, LaunchInfo, NodeTree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import PlmModule, RankProcess, Stdio

from .daemons import Daemon, DaemonServer, SpawnAnswer
from .remote import RemoteRank, Sink

#: How long :meth:`DaemonPlmModule.finish` waits for the daemons to exit before killing them.
EXIT_WAIT = 10.0

#: Makes the launch record of one daemon: its node tree and the launcher address it uses.
RecordMaker = Callable[[NodeTree, str], LaunchInfo]


class DaemonPlmModule(PlmModule):
    """A plm whose per-node daemons fork the ranks; subclasses start the daemons."""

    def __init__(self, agent: tuple[str, ...], python: str, connect_timeout: float) -> None:
        #: The remote shell daemons start their children with (empty: none).
        self.agent = agent
        #: The interpreter that runs the daemons.
        self.python = python
        #: Seconds a node's daemon may take to report in.
        self.connect_timeout = connect_timeout
        self._nodes: tuple[Node, ...] = ()
        self._exported: dict[str, str] = {}
        self._server: DaemonServer | None = None
        self._daemons: dict[int, Daemon] = {}
        self._by_name: dict[str, Daemon] = {}

    # -- before launch ------------------------------------------------------------------------

    def check_nodes(self, nodes: Sequence[Node]) -> None:
        """Remember the nodes; subclasses check first that they can start daemons there."""
        self._nodes = tuple(nodes)

    def forward_environment(self, exported: Mapping[str, str]) -> None:
        self._exported = dict(exported)

    def control_host(self) -> str:
        return "0.0.0.0"

    def prepare(self, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> None:
        if self._server is not None:
            return
        secret = secrets.token_bytes(32)
        launch_id = secrets.token_hex(8)
        for index, node in enumerate(self._nodes):
            if node.name not in self._by_name:
                daemon = Daemon(index, node.name)
                self._daemons[index] = daemon
                self._by_name[node.name] = daemon
        server = DaemonServer(secret, launch_id, self._daemons)
        server.start()
        self._server = server

        def record(tree: NodeTree, launcher_host: str) -> LaunchInfo:
            return LaunchInfo(
                launch_id, secret, launcher_host, server.port, tree, self.agent, self.python
            )

        self.start_daemons(list(self._by_name.values()), record)

    @abc.abstractmethod
    def start_daemons(self, daemons: list[Daemon], record: RecordMaker) -> None:
        """Start the daemon of every node in ``daemons`` (one record per distinct node).

        ``record(tree, launcher_host)`` makes a daemon's launch record (the launch secret
        included: it must reach the daemon on its standard input, never a command line).
        Each started process is handed to :meth:`watch`; a daemon that could not be started
        gets its ``lost`` reason.
        """

    def watch(self, daemon: Daemon, process: subprocess.Popen[bytes]) -> None:
        """Let the server notice when the process that runs ``daemon`` ends."""
        assert self._server is not None
        daemon.process = process
        self._server.watch(daemon)

    # -- launch -------------------------------------------------------------------------------

    def spawn(
        self,
        placement: Placement,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        stdio: Stdio,
    ) -> RankProcess:
        server = self._server
        assert server is not None, "prepare() starts the daemons before the first spawn"
        rank = placement.rank
        daemon = self._by_name[placement.node.name]
        self._wait_connected(daemon, rank)
        if is_local_host(daemon.name):
            rank_env = dict(env)
        else:
            rank_env = {k: v for k, v in env.items() if k.startswith("OMPY_")}
            rank_env.update(self._exported)
        forward_stdin = stdio.stdin is None
        sinks = {
            fd: Sink(self._sink_fd(target))
            for fd, target in ((1, stdio.stdout), (2, stdio.stderr))
            if target != subprocess.DEVNULL
        }

        def send_signal(signum: int) -> None:
            server.send(daemon, {"op": SIGNAL, "rank": rank, "signum": signum})

        # Known to the server before the daemon hears of it: its output and exit may arrive
        # before the answer to ``spawn`` is read here.
        remote = RemoteRank(rank, 0, send_signal, sinks)
        server.call(lambda: daemon.ranks.__setitem__(rank, remote))
        server.send(
            daemon,
            {
                "op": SPAWN,
                "rank": rank,
                "argv": list(argv),
                "env": rank_env,
                "cwd": str(cwd),
                "stdin": forward_stdin,
            },
        )
        answer = self._wait_answer(daemon, rank)
        if answer.pid is None:
            server.call(lambda: self._forget(daemon, remote))
            raise LaunchError(answer.message or f"cannot start rank {rank}", answer.code)
        remote.pid = answer.pid
        if forward_stdin:
            server.forward_stdin(remote, daemon)
        return remote

    @staticmethod
    def _forget(daemon: Daemon, remote: RemoteRank) -> None:
        """A rank that did not start (in the server thread)."""
        daemon.ranks.pop(remote.rank, None)
        remote.release()
        for sink in remote.sinks.values():
            sink.close()

    @staticmethod
    def _sink_fd(target: int | None) -> int:
        fd = os.dup(1 if target is None else target)
        if target is not None:
            os.set_blocking(fd, False)  # the pipe is the iof's alone; never block the server
        return fd

    def _wait_connected(self, daemon: Daemon, rank: int) -> None:
        assert self._server is not None
        deadline = time.monotonic() + self.connect_timeout
        with self._server.cond:
            while not daemon.connected and daemon.lost is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LaunchError(
                        f"cannot start rank {rank} on {daemon.name}: its ompy daemon did not "
                        f"report in within {self.connect_timeout:g} s "
                        f"(plm_ssh_connect_timeout)"
                    )
                self._server.cond.wait(min(left, 0.5))
        if daemon.lost is not None:
            raise LaunchError(f"cannot start rank {rank} on {daemon.name}: {daemon.lost}")

    def _wait_answer(self, daemon: Daemon, rank: int) -> SpawnAnswer:
        assert self._server is not None
        with self._server.cond:
            while rank not in daemon.answers and daemon.lost is None:
                self._server.cond.wait(0.5)
            if rank in daemon.answers:
                return daemon.answers.pop(rank)
        return SpawnAnswer(None, f"cannot start rank {rank} on {daemon.name}: {daemon.lost}", 1)

    # -- after the job ------------------------------------------------------------------------

    def finish(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        for daemon in self._daemons.values():
            daemon.exiting = True
            server.send(daemon, {"op": EXIT})
        deadline = time.monotonic() + EXIT_WAIT
        for daemon in self._daemons.values():
            if daemon.process is None:
                continue
            try:
                daemon.process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                daemon.process.kill()
                daemon.process.wait()
            for stream in (daemon.process.stdin, daemon.process.stderr):
                if stream is not None:
                    stream.close()
        server.stop()
        for daemon in self._daemons.values():
            for remote in daemon.ranks.values():
                for sink in remote.sinks.values():
                    sink.close()
