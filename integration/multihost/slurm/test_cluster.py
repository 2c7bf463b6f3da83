"""The Slurm fixture itself: the cluster runs steps on every node and leaves nothing behind."""

from __future__ import annotations

import pytest

from .cluster import SlurmCluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def test_steps_run_on_every_node_of_a_three_node_cluster(slurm_three, slurm_jobs):
    result = slurm_jobs(slurm_three).run(
        ["srun", "-N3", "--ntasks-per-node=2", "sh", "-c", "echo $SLURMD_NODENAME $SLURM_LOCALID"]
    )
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split("\n")[:-1]) == [
        f"n{node} {local}" for node in (1, 2, 3) for local in (0, 1)
    ]


def test_a_stopped_cluster_leaves_no_process_and_no_state():
    cluster = SlurmCluster(nodes=2)
    try:
        cluster.start()
        assert cluster.client("srun", "-N2", "true") == ""
        assert cluster.leftovers(), "the daemons carry the fixture's tag"
    finally:
        cluster.stop()
    assert cluster.leftovers() == []
    assert not cluster.state.exists()
