"""The component: inside a Slurm allocation, start the daemons of other nodes with srun.

It offers when ``ompy run`` runs in a Slurm job (``SLURM_JOB_ID``) and the job's nodes are
nodes of that allocation (``SLURM_JOB_NODELIST``) not all of which are this host; then its
priority (30) is above plm ssh's (20): srun needs no ssh keys, and Slurm tracks and cleans up
what the daemons start.  A job on this host alone stays with plm local.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence

from ompy.opal.mca import Offer
from ompy.opal.mca.params import ParamType
from ompy.orte.hostlist import HostlistError, expand_hostlist
from ompy.orte.launcher.hosts import is_local_host, local_host_name
from ompy.orte.launcher.job import Node
from ompy.orte.mca.plm import PlmComponent, PlmModule

from . import __version__
from .launcher import SlurmPlmModule, SlurmSettings


def allocation_nodes(environ: dict[str, str] | os._Environ[str]) -> set[str] | None:
    """The node names of the Slurm allocation this process is in, or None outside one."""
    if not environ.get("SLURM_JOB_ID"):
        return None
    text = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST")
    if not text:
        return None
    try:
        return set(expand_hostlist(text))
    except HostlistError:
        return None  # ras slurm reports the malformed variable


class SlurmPlmComponent(PlmComponent):
    """Starts an ``ompy daemon`` per node with one srun step; the daemons fork the ranks."""

    name = "slurm"
    version = __version__
    description = (
        "in a Slurm allocation, start one ompy daemon per node with one srun step; the "
        "daemons fork their node's ranks and forward their stdio, signals and exits"
    )
    default_priority = 30

    def register_params(self) -> None:
        super().register_params()
        self.register_param(
            "python",
            ParamType.STR,
            "",
            "The interpreter that runs the daemons on the nodes (empty: the one running "
            "ompy run, which must then exist at the same path there)",
            level=4,
        )
        self.register_param(
            "launcher_host",
            ParamType.STR,
            "",
            "The address the daemons connect back to (empty: the address srun ran at, "
            "SLURM_LAUNCH_NODE_IPADDR)",
            level=4,
        )
        self.register_param(
            "connect_timeout",
            ParamType.FLOAT,
            60.0,
            "Seconds to wait for a node's daemon to report in before the job fails",
            level=5,
            minimum=0.1,
        )
        self.register_param(
            "srun_args",
            ParamType.STR,
            "",
            "More srun options for the daemons' step (shell words), e.g. '--partition=x'",
            level=5,
        )

    def query(self, context: Sequence[Node]) -> Offer[PlmModule] | None:
        allocated = allocation_nodes(os.environ)
        if allocated is None or all(is_local_host(node.name) for node in context):
            return None
        if not all(node.name in allocated or is_local_host(node.name) for node in context):
            return None  # hosts beyond the allocation: not srun's to start
        settings = SlurmSettings(
            agent=(),
            python=self.param("python") or sys.executable,
            launcher_host=self.param("launcher_host"),
            connect_timeout=self.param("connect_timeout"),
            connect_timeout_param="plm_slurm_connect_timeout",
            srun_args=tuple(shlex.split(self.param("srun_args"))),
            # ras slurm names this host as the launcher does; srun needs Slurm's name
            slurm_names={local_host_name(): name for name in allocated if is_local_host(name)},
        )
        module = SlurmPlmModule(settings)
        return Offer(self.priority, module)
