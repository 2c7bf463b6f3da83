"""What a node's rank starter binds a rank to: the launcher's policy and the rank's place on
its node, read from the rank's environment."""

from __future__ import annotations

from ompy.opal.binding import Topology
from ompy.orte.control.environment import BINDING
from ompy.orte.launcher.binding import NodeBinding

# Two packages of two cores of two hardware threads: processors 0-7, siblings (0,4), (1,5)...
CORES = tuple(frozenset({core, core + 4}) for core in range(4))
PACKAGES = (frozenset({0, 1, 4, 5}), frozenset({2, 3, 6, 7}))
TWO_SOCKETS = Topology(CORES, PACKAGES)


def test_a_node_binds_by_the_launchers_policy_and_the_ranks_place():
    binding = NodeBinding(TWO_SOCKETS)
    env = {BINDING: "core", "OMPY_LOCAL_RANK": "2", "OMPY_LOCAL_SIZE": "4"}
    assert binding.cpus(env) == CORES[2]
    assert binding.cpus({**env, BINDING: "none"}) is None
    assert binding.cpus({"OMPY_LOCAL_RANK": "0", "OMPY_LOCAL_SIZE": "2"}) is None  # no policy
    assert binding.cpus({BINDING: "core"}) is None  # not a launched rank
    assert binding.cpus({**env, "OMPY_LOCAL_RANK": "4"}) is None  # not a place on the node
