"""The launcher's side of daemon-based launchers (plm ``ssh``, ``slurm``): everything but how
the daemons are started.

:class:`DaemonPlmModule` is a :class:`~ompy.orte.mca.plm.PlmModule` whose ranks are forked by
one ``ompy daemon`` per node (:mod:`ompy.orte.daemon`).  A component subclasses it and says how
to start the daemons (:meth:`DaemonPlmModule.start_daemons`: through ssh, as one srun step,
...); the rest is here:

* :meth:`~DaemonPlmModule.prepare` (before the launcher's remaining set-up, so the daemons
  start meanwhile) makes a launch secret, starts the daemon server
  (:class:`~.daemons.DaemonServer`) and asks the subclass to start the daemons of every node
  of the allocation, each with its :class:`~ompy.orte.daemon.protocol.LaunchInfo`; a node that
  is this host gets its daemon started directly (:meth:`~DaemonPlmModule.start_local`).
* With ``local_daemon`` off, the launcher's own host gets no daemon: the launcher forks its
  ranks itself (:func:`own_node_starter`), from the fork server the ``ompy`` executable
  started at its first instruction, whose imports overlapped the launcher's own.
* Each daemon is sent, as soon as it has authenticated, the program its ranks will run
  (``warm``), so that every node's fork server imports in parallel rather than one node
  after another as the ranks are spawned in order.
* :meth:`~DaemonPlmModule.spawn_all` sends each daemon, once it has reported in, one
  ``launch`` message with all of its node's ranks (their environments as differences to the
  node's common one), so that starting a job costs one round trip per node rather than one
  per rank, and the nodes fork their ranks at the same time; then it reads the answers in
  rank order.  :meth:`~DaemonPlmModule.spawn` (one rank: ``MPI_Comm_spawn``'s) waits until
  the rank's node has reported in, asks its daemon to start the rank and waits for the
  answer.  Either answer is a started rank
  (:class:`~.remote.RemoteRank`), or the reason it could not start (program not found: 127,
  ...).  Ranks on other hosts get the ``OMPY_`` variables and what the user forwarded (``-x``,
  ``--mca``); ranks on this host the launcher's whole environment.
* A lost daemon (its connection or process ended, or its parent reported it gone) ends its
  ranks' lives as far as the launcher is concerned, and the job ends naming its host.
* :meth:`~DaemonPlmModule.finish` tells every daemon to exit and waits for their processes.
"""

from __future__ import annotations

import abc
import functools
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from ompy.orte.daemon import agent
from ompy.orte.daemon.protocol import (
    EXIT,
    LAUNCH,
    SIGNAL,
    SPAWN,
    WARM,
    LaunchInfo,
    NodeTree,
    env_difference,
)
from ompy.orte.daemon.ranks import RankStarter, SpawnError
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.forkserver.early import take_early
from ompy.orte.launcher.forkserver.pycommand import classify
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node, Placement
from ompy.orte.mca.plm import PlmModule, RankProcess, SpawnRequest, Stdio

from .daemons import Daemon, DaemonServer, SpawnAnswer
from .remote import RemoteRank, Sink

#: How long :meth:`DaemonPlmModule.finish` waits for the daemons to exit before killing them.
EXIT_WAIT = 10.0


@attrs.frozen
class DaemonSettings:
    """What every daemon-based launcher is told by its component's parameters."""

    #: The remote shell daemons use to start daemons of their own (a tree), or ().
    agent: tuple[str, ...]
    #: The interpreter that runs the daemons.
    python: str
    #: The address the daemons connect back to ("": where their remote shell came from).
    launcher_host: str
    #: Seconds to wait for a node's daemon to report in.
    connect_timeout: float
    #: The parameter that set it, named when the wait expires (``plm_ssh_connect_timeout``).
    connect_timeout_param: str
    #: Whether the launcher's own host gets a daemon like the others; if not, the launcher
    #: forks that host's ranks itself (from the fork server the ``ompy`` executable started
    #: at its first instruction), as Open MPI's mpirun serves its own node.
    local_daemon: bool = True


class DaemonPlmModule(PlmModule):
    """A plm module whose ranks are forked by node daemons (see the module documentation).

    Required of a subclass: :meth:`start_daemons`; it may extend :meth:`check_nodes`.
    """

    def __init__(self, settings: DaemonSettings) -> None:
        self.settings = settings
        self._nodes: tuple[Node, ...] = ()
        self._exported: dict[str, str] = {}
        self._server: DaemonServer | None = None
        self._daemons: dict[int, Daemon] = {}
        self._by_name: dict[str, Daemon] = {}
        #: Starts the ranks of the launcher's own host when it has no daemon.
        self._own: RankStarter | None = None
        #: Per daemon's node: the environment its ranks share, sent once with ``warm`` and
        #: again with ``launch`` (each rank's own variables travel as a difference to it).
        self._common_env: dict[int, dict[str, str]] = {}

    # -- before launch ------------------------------------------------------------------------

    def check_nodes(self, nodes: Sequence[Node]) -> None:
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
            if not self.settings.local_daemon and is_local_host(node.name):
                if self._own is None:
                    self._own = own_node_starter(node.name, argv, env, cwd)
                continue
            if node.name not in self._by_name:
                daemon = Daemon(index, node.name)
                self._daemons[index] = daemon
                self._by_name[node.name] = daemon
        server = DaemonServer(secret, launch_id, self._daemons)
        for daemon in self._by_name.values():
            common = self._rank_environment(daemon, env)
            self._common_env[daemon.node] = common
            server.greetings[daemon.node] = {
                "op": WARM,
                "argv": list(argv),
                "env": common,
                "cwd": str(cwd),
            }
        server.start()
        self._server = server
        unique = list(self._by_name.values())

        def info(tree: NodeTree, host: str) -> LaunchInfo:
            settings = self.settings
            return LaunchInfo(
                launch_id, secret, host, server.port, tree, settings.agent, settings.python
            )

        for daemon in unique:
            if is_local_host(daemon.name):
                self.start_local(daemon, info(NodeTree(daemon.node, daemon.name), "127.0.0.1"))
        remote = [d for d in unique if not is_local_host(d.name)]
        if remote:
            self.start_daemons(remote, info)

    @abc.abstractmethod
    def start_daemons(
        self, daemons: Sequence[Daemon], info: Callable[[NodeTree, str], LaunchInfo]
    ) -> None:
        """Start the daemons of ``daemons`` (nodes other than this one).

        ``info(tree, launcher_host)`` makes the launch record of the daemon of ``tree.node``
        (``launcher_host`` "" lets it connect back to where its remote shell came from).  A
        daemon is started through :meth:`watch` (with the others its process runs, if one process
        runs several): the early end of that process then loses them, with what it wrote.
        """

    def start_local(self, daemon: Daemon, info: LaunchInfo) -> None:
        """Start the daemon of this host's node directly (no remote shell)."""
        self.watch(daemon, lambda: agent.start_daemon(info, None))

    def watch(
        self, daemons: Daemon | Sequence[Daemon], start: Callable[[], subprocess.Popen[bytes]]
    ) -> None:
        """Run ``start`` for ``daemons`` (one, or all those one process runs, as an ``srun``
        step) and watch the process it returns: its early end loses them, with what it wrote;
        :meth:`finish` waits for it."""
        assert self._server is not None
        group = [daemons] if isinstance(daemons, Daemon) else list(daemons)
        try:
            process = start()
        except OSError as error:
            for daemon in group:
                daemon.lost = f"its process could not be started: {error}"
            return
        for daemon in group:
            daemon.process = process
        self._server.watch(group, process)

    # -- launch -------------------------------------------------------------------------------

    def spawn(
        self,
        placement: Placement,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: Path,
        stdio: Stdio,
    ) -> RankProcess:
        rank = placement.rank
        if self._own is not None and placement.node.name not in self._by_name:
            return self._start_own(rank, argv, env, cwd, stdio)
        daemon = self._by_name[placement.node.name]
        self._wait_connected(daemon, rank)
        remote = self._expect(daemon, rank, stdio)
        self._send_server(
            daemon,
            {
                "op": SPAWN,
                "rank": rank,
                "argv": list(argv),
                "env": self._rank_environment(daemon, env),
                "cwd": str(cwd),
                "stdin": stdio.stdin is None,
            },
        )
        return self._started(daemon, remote, stdio)

    def spawn_all(self, requests: Iterable[SpawnRequest]) -> Iterator[RankProcess]:
        """One ``launch`` message per daemon with all of its ranks, sent as soon as it has
        reported in; then the answers, in the order of ``requests`` (ranks of the
        launcher's own node, when it has no daemon, are forked meanwhile).  Ranks sent but
        not yielded when the launcher stops (a failure before them, a signal) are killed."""
        requests = list(requests)  # every rank's request (and stdio) before the first message
        batches: dict[tuple[str, tuple[str, ...], Path], list[SpawnRequest]] = {}
        for request in requests:
            name = request.placement.node.name
            if self._own is None or name in self._by_name:
                key = (name, tuple(request.argv), request.cwd)  # one program per message
                batches.setdefault(key, []).append(request)
        sent: dict[int, tuple[Daemon, RemoteRank]] = {}
        refused: dict[int, LaunchError] = {}
        for (name, _argv, _cwd), batch in batches.items():
            daemon = self._by_name[name]
            try:
                self._wait_connected(daemon, batch[0].placement.rank)
            except LaunchError as error:
                refused.update((request.placement.rank, error) for request in batch)
                continue
            sent.update(self._launch(daemon, batch))
        try:
            for request in requests:
                rank = request.placement.rank
                if rank in refused:
                    raise refused[rank]
                if rank not in sent:
                    yield self._start_own(
                        rank, request.argv, request.env, request.cwd, request.stdio
                    )
                    continue
                daemon, remote = sent.pop(rank)
                yield self._started(daemon, remote, request.stdio)
        finally:
            for daemon, remote in sent.values():
                self._send_server(
                    daemon, {"op": SIGNAL, "rank": remote.rank, "signum": signal.SIGKILL}
                )
                self._call_server(functools.partial(self._forget, daemon, remote))

    def _launch(
        self, daemon: Daemon, batch: Sequence[SpawnRequest]
    ) -> dict[int, tuple[Daemon, RemoteRank]]:
        """Send ``daemon`` the ``launch`` message of ``batch`` (ranks of one program)."""
        first = batch[0]
        common = self._common_env.get(daemon.node, {})
        ranks: list[dict[str, Any]] = []
        expected: dict[int, tuple[Daemon, RemoteRank]] = {}
        for request in batch:
            rank = request.placement.rank
            expected[rank] = (daemon, self._expect(daemon, rank, request.stdio))
            item = env_difference(common, self._rank_environment(daemon, request.env))
            ranks.append({"rank": rank, **item, "stdin": request.stdio.stdin is None})
        message = {
            "op": LAUNCH,
            "argv": list(first.argv),
            "env": common,
            "cwd": str(first.cwd),
            "ranks": ranks,
        }
        self._send_server(daemon, message)
        return expected

    def _start_own(
        self, rank: int, argv: Sequence[str], env: Mapping[str, str], cwd: Path, stdio: Stdio
    ) -> RankProcess:
        """Fork a rank of the launcher's own node (which has no daemon)."""
        assert self._own is not None
        try:
            return self._own.start(rank, argv, env, str(cwd), stdio)
        except SpawnError as error:
            raise LaunchError(str(error), error.code) from None

    def _expect(self, daemon: Daemon, rank: int, stdio: Stdio) -> RemoteRank:
        """The handle of a rank about to be asked of ``daemon``, known to the server before
        the daemon hears of it: its output and exit may arrive before its answer is read."""
        server = self._server
        assert server is not None, "prepare() starts the daemons before the first spawn"
        sinks = {
            fd: Sink(self._sink_fd(target))
            for fd, target in ((1, stdio.stdout), (2, stdio.stderr))
            if target != subprocess.DEVNULL
        }

        def send_signal(signum: int) -> None:
            server.send(daemon, {"op": SIGNAL, "rank": rank, "signum": signum})

        remote = RemoteRank(rank, 0, send_signal, sinks)
        server.call(lambda: daemon.ranks.__setitem__(rank, remote))
        return remote

    def _started(self, daemon: Daemon, remote: RemoteRank, stdio: Stdio) -> RemoteRank:
        """Wait for the daemon's answer about ``remote``: it runs, or ``LaunchError``."""
        answer = self._wait_answer(daemon, remote.rank)
        if answer.pid is None:
            self._call_server(lambda: self._forget(daemon, remote))
            raise LaunchError(answer.message or f"cannot start rank {remote.rank}", answer.code)
        remote.pid = answer.pid
        if stdio.stdin is None:
            assert self._server is not None
            self._server.forward_stdin(remote, daemon)
        return remote

    def _send_server(self, daemon: Daemon, message: dict[str, Any]) -> None:
        assert self._server is not None
        self._server.send(daemon, message)

    def _call_server(self, callback: Callable[[], None]) -> None:
        assert self._server is not None
        self._server.call(callback)

    def _rank_environment(self, daemon: Daemon, env: Mapping[str, str]) -> dict[str, str]:
        """What a rank of ``daemon``'s node is sent of ``env``: all of it on this host; the
        ``OMPY_`` variables and what the user forwarded on another (its daemon adds its own
        environment)."""
        if is_local_host(daemon.name):
            return dict(env)
        rank_env = {k: v for k, v in env.items() if k.startswith("OMPY_")}
        rank_env.update(self._exported)
        return rank_env

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
        deadline = time.monotonic() + self.settings.connect_timeout
        with self._server.cond:
            while not daemon.connected and daemon.lost is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LaunchError(
                        f"cannot start rank {rank} on {daemon.name}: its ompy daemon did not "
                        f"report in within {self.settings.connect_timeout:g} s "
                        f"({self.settings.connect_timeout_param})"
                    )
                self._server.cond.wait(min(left, 0.5))
        if daemon.lost is not None:
            raise LaunchError(f"cannot start rank {rank} on {daemon.name}: {daemon.lost}")

    def _wait_answer(self, daemon: Daemon, rank: int) -> SpawnAnswer:
        """The daemon's answer to ``spawn``; a lost or silent daemon is an answer too."""
        assert self._server is not None
        deadline = time.monotonic() + self.settings.connect_timeout
        with self._server.cond:
            while rank not in daemon.answers and daemon.lost is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    why = f"its daemon did not answer within {self.settings.connect_timeout:g} s"
                    return SpawnAnswer(None, f"cannot start rank {rank} on {daemon.name}: {why}", 1)
                self._server.cond.wait(min(left, 0.5))
            if rank in daemon.answers:
                return daemon.answers.pop(rank)
        return SpawnAnswer(None, f"cannot start rank {rank} on {daemon.name}: {daemon.lost}", 1)

    # -- after the job ------------------------------------------------------------------------

    def finish(self) -> None:
        own, self._own = self._own, None
        if own is not None:
            own.close()
        server, self._server = self._server, None
        if server is None:
            return
        for daemon in self._daemons.values():
            daemon.exiting = True
            server.send(daemon, {"op": EXIT})
        deadline = time.monotonic() + EXIT_WAIT
        processes = {id(d.process): d.process for d in self._daemons.values() if d.process}
        for process in processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            for stream in (process.stdin, process.stderr):
                if stream is not None:
                    stream.close()
        server.stop()
        for daemon in self._daemons.values():
            for remote in daemon.ranks.values():
                for sink in remote.sinks.values():
                    sink.close()


def own_node_starter(
    host: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path
) -> RankStarter:
    """The starter of the launcher's own host's ranks: it adopts the fork server the ``ompy``
    executable started on a guess when that server runs exactly this job, else starts one."""
    starter = RankStarter(host)
    command = classify(argv, cwd)
    early = take_early(command, env, cwd) if command is not None else None
    if early is not None:
        starter.adopt(early, argv)
    else:
        starter.warm(argv, env, str(cwd))
    return starter
