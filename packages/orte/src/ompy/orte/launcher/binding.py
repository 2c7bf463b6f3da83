"""Binding the ranks a node's starter starts: the launcher's policy and the rank's place on
its node, read from the rank's environment, applied to the node's own topology
(:mod:`ompy.opal.binding`)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ompy.opal.binding import Topology, cpuset
from ompy.orte.control.environment import BINDING, LOCAL_RANK, LOCAL_SIZE


@attrs.define
class NodeBinding:
    """The bindings of the ranks one starter (``plm local``, a node daemon) starts on its node.

    The node's topology is read once, at the first rank to bind, by the process that starts
    the ranks: on the node itself, so the launcher need not know remote nodes' processors.
    """

    _topology: Topology | None = None

    def cpus(self, env: Mapping[str, str]) -> frozenset[int] | None:
        """The processors of the rank about to start with environment ``env``: the launcher's
        policy (``OMPY_BINDING``) and the rank's place on its node
        (``OMPY_LOCAL_RANK`` of ``OMPY_LOCAL_SIZE``).  None when the environment asks for no
        binding or says too little (a process that is not a rank of a launched job)."""
        policy = env.get(BINDING, "none")
        try:
            local_rank, local_size = int(env[LOCAL_RANK]), int(env[LOCAL_SIZE])
        except (KeyError, ValueError):
            return None
        if policy == "none" or not 0 <= local_rank < local_size:
            return None
        if self._topology is None:
            self._topology = Topology.read()
        return cpuset(policy, local_rank, local_size, self._topology)
