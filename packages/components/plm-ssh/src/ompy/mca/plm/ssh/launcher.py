"""The ``ssh`` plm module: the node daemons are started through a remote shell, as a tree.

Everything else (the daemon server, spawning, output, exits, signals, lost daemons) is the
plm framework's daemon base, :mod:`ompy.orte.mca.plm.base.daemon_plm`, shared with other
daemon-based launchers.  This module starts at most ``plm_ssh_tree_fanout`` daemons itself,
through ``plm_ssh_agent``; each of them starts the next level of the tree
(:mod:`ompy.orte.daemon.tree`), and every daemon connects straight back to the launcher.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable, Sequence

import attrs

from ompy.orte.daemon import agent
from ompy.orte.daemon.protocol import LaunchInfo, NodeTree
from ompy.orte.daemon.tree import daemon_tree
from ompy.orte.launcher.errors import LaunchError
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm.base.daemon_plm import DaemonPlmModule, DaemonSettings
from ompy.orte.mca.plm.base.daemons import Daemon


@attrs.frozen
class SshSettings(DaemonSettings):
    """The component's parameters, read once."""

    fanout: int = 32


class SshPlmModule(DaemonPlmModule):
    """The plm module of the ``ssh`` component (see the module documentation)."""

    settings: SshSettings

    def __init__(self, settings: SshSettings) -> None:
        super().__init__(settings)

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

    def start_daemons(
        self, daemons: Sequence[Daemon], info: Callable[[NodeTree, str], LaunchInfo]
    ) -> None:
        by_node = {daemon.node: daemon for daemon in daemons}
        nodes = [(daemon.node, daemon.name) for daemon in daemons]
        for tree in daemon_tree(nodes, self.settings.fanout):
            self.watch(by_node[tree.node], _starter(info(tree, self.settings.launcher_host)))


def _starter(record: LaunchInfo) -> Callable[[], subprocess.Popen[bytes]]:
    """Start the daemon of ``record`` through the remote shell (on the node it names)."""
    return lambda: agent.start_daemon(record, record.tree.name)


def agent_words(text: str) -> tuple[str, ...]:
    """``plm_ssh_agent`` as argv words (shell quoting rules)."""
    return tuple(shlex.split(text))
