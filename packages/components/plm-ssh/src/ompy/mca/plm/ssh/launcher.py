"""The ``ssh`` plm module: one ``ompy daemon`` per node, started through a remote shell.

Everything but the starting of the daemons is the plm base's daemon module
(:class:`~ompy.orte.mca.plm.base.daemon_module.DaemonPlmModule`: the daemon server, spawning
ranks through the daemons, lost daemons, the end of the job).  Here, in
:meth:`SshPlmModule.start_daemons`: this host's daemon is started directly, the others through
``plm_ssh_agent``, the launcher itself starting at most ``plm_ssh_tree_fanout`` of them and each
daemon the next level (:mod:`ompy.orte.daemon.tree`).  The launch record, with a fresh launch
secret, goes to each daemon's standard input.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Sequence

import attrs

from ompy.orte.daemon import agent
from ompy.orte.daemon.protocol import LaunchInfo, NodeTree
from ompy.orte.daemon.tree import daemon_tree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm.base.daemon_module import DaemonPlmModule, RecordMaker
from ompy.orte.mca.plm.base.daemons import Daemon


@attrs.frozen
class SshSettings:
    """The component's parameters, read once."""

    agent: tuple[str, ...]
    python: str
    fanout: int
    launcher_host: str
    connect_timeout: float


class SshPlmModule(DaemonPlmModule):
    """The plm module of the ``ssh`` component (see the module documentation)."""

    def __init__(self, settings: SshSettings) -> None:
        super().__init__(settings.agent, settings.python, settings.connect_timeout)
        self.settings = settings

    def check_nodes(self, nodes: Sequence[Node]) -> None:
        if not self.settings.agent:
            raise LaunchError("plm_ssh_agent is empty: name the remote shell, e.g. 'ssh'")
        program = self.settings.agent[0]
        if any(not is_local_host(n.name) for n in nodes) and shutil.which(program) is None:
            raise LaunchError(
                f"cannot start daemons on other hosts: the remote shell '{program}' "
                f"(plm_ssh_agent) was not found on PATH"
            )
        super().check_nodes(nodes)

    def start_daemons(self, daemons: list[Daemon], record: RecordMaker) -> None:
        local = [d for d in daemons if is_local_host(d.name)]
        remote = [(d.node, d.name) for d in daemons if not is_local_host(d.name)]
        by_node = {d.node: d for d in daemons}
        for daemon in local:
            self._start(daemon, record(NodeTree(daemon.node, daemon.name), "127.0.0.1"), None)
        for tree in daemon_tree(remote, self.settings.fanout):
            daemon = by_node[tree.node]
            self._start(daemon, record(tree, self.settings.launcher_host), daemon.name)

    def _start(self, daemon: Daemon, info: LaunchInfo, host: str | None) -> None:
        try:
            process = agent.start_daemon(info, host)
        except OSError as error:
            daemon.lost = f"its process could not be started: {error}"
            return
        self.watch(daemon, process)


def agent_words(text: str) -> tuple[str, ...]:
    """``plm_ssh_agent`` as argv words (shell quoting rules)."""
    return tuple(shlex.split(text))
