"""The component: offers the ssh launcher when the allocation names another host."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType
from ompy.orte.launcher.hosts import is_local_host
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm import PlmComponent

from . import __version__

if TYPE_CHECKING:
    from .launcher import SshPlmModule


class SshPlmComponent(PlmComponent):
    """Starts an ``ompy daemon`` per node through a remote shell; the daemons fork the ranks."""

    name = "ssh"
    version = __version__
    description = (
        "start one ompy daemon per node through ssh (a tree of daemons beyond the fan-out); "
        "the daemons fork their node's ranks and forward their stdio, signals and exits"
    )
    default_priority = 20

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "agent",
            ParamType.STR,
            "ssh",
            "The remote shell that starts a daemon: its words, then the host name and the "
            "command are appended (e.g. 'ssh -F /path/ssh_config', or a wrapper script)",
            level=2,
        )
        self.register_param(
            "python",
            ParamType.STR,
            "",
            "The interpreter that runs the daemons on the other hosts (empty: the one running "
            "ompy run, which must then exist at the same path there)",
            level=4,
        )
        self.register_param(
            "tree_fanout",
            ParamType.INT,
            32,
            "How many daemons the launcher (and each daemon) starts itself; the nodes beyond "
            "are started by the daemons, as a tree",
            level=5,
            minimum=1,
        )
        self.register_param(
            "launcher_host",
            ParamType.STR,
            "",
            "The address the daemons connect back to (empty: the address their ssh connection "
            "came from)",
            level=4,
        )
        self.register_param(
            "connect_timeout",
            ParamType.FLOAT,
            30.0,
            "Seconds to wait for a node's daemon to report in before the job fails",
            level=5,
            minimum=0.1,
        )

        self.register_param(
            "local_daemon",
            ParamType.BOOL,
            False,
            "Start an ompy daemon on the launcher's own host too, as on the others (off: the "
            "launcher forks that host's ranks itself, from its early fork server)",
            level=5,
        )

    def query(self, context: Sequence[Node]) -> Offer[SshPlmModule] | None:
        if all(is_local_host(node.name) for node in context):
            return None  # one host: the local launcher does it without daemons
        # Imported only now: every ``ompy run`` loads this component to ask it.
        from .launcher import SshPlmModule, SshSettings, agent_words

        settings = SshSettings(
            agent=agent_words(self.param("agent")),
            python=self.param("python") or sys.executable,
            launcher_host=self.param("launcher_host"),
            connect_timeout=self.param("connect_timeout"),
            connect_timeout_param=self.param_name("connect_timeout"),
            fanout=self.param("tree_fanout"),
            local_daemon=self.param("local_daemon"),
        )
        return Offer(self.priority, SshPlmModule(settings))
