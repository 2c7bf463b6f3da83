"""The record one ``srun`` step hands to every daemon, and how a daemon finds its own part.

``srun --input=all`` copies the launcher's bytes to the standard input of every task, so all
daemons read the same frame (the control plane's framing, :mod:`ompy.orte.control.wire`): the
launch record of :mod:`ompy.orte.daemon.protocol` without a node of its own, and the node id
of every Slurm node name.  Each daemon takes its node from ``SLURMD_NODENAME`` (the Slurm node
its task runs on) and its launcher address from the record or, when that is empty, from
``SLURM_LAUNCH_NODE_IPADDR`` (the address srun ran at).  The launch secret travels in the
frame, through srun's own I/O connections, never on a command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ompy.orte.daemon.protocol import DaemonProtocolError, LaunchInfo, NodeTree

NODE_VARIABLE = "SLURMD_NODENAME"
LAUNCH_ADDRESS_VARIABLE = "SLURM_LAUNCH_NODE_IPADDR"


def step_record(info: LaunchInfo, nodes: Mapping[str, int]) -> dict[str, Any]:
    """The frame of one srun step: ``info`` (its tree is replaced per node) and the nodes."""
    return {"launch": info.to_wire(), "nodes": dict(nodes)}


def node_record(frame: Any, environ: Mapping[str, str]) -> LaunchInfo:
    """This daemon's launch record from the step's frame and its task's environment."""
    if not isinstance(frame, dict) or not isinstance(frame.get("nodes"), dict):
        raise DaemonProtocolError("the srun step's record has no node table")
    launch = frame.get("launch")
    if not isinstance(launch, dict):
        raise DaemonProtocolError("the srun step's record has no launch record")
    info = LaunchInfo.from_wire(launch)
    name = environ.get(NODE_VARIABLE, "")
    node = frame["nodes"].get(name)
    if not isinstance(node, int) or isinstance(node, bool):
        known = ", ".join(sorted(map(str, frame["nodes"])))
        raise DaemonProtocolError(
            f"{NODE_VARIABLE}={name!r} is not one of the job's nodes ({known})"
        )
    host = info.launcher_host or environ.get(LAUNCH_ADDRESS_VARIABLE, "") or "127.0.0.1"
    return attrs.evolve(info, tree=NodeTree(node, name), launcher_host=host)
