"""Slurm across network-namespace hosts: one slurmd per host ``h1 h2 h3``, clients on ``h1``.

Unlike the three slurmd of ``slurm_three`` (one machine), these nodes have their own host
names and addresses (``10.77.0.i``), so srun connects to each node over its NIC, the daemons of
plm slurm connect back to the launcher's address on ``h1`` and ranks on different hosts can
only talk over TCP between namespace addresses, which the NIC counters prove.  The hosts share
``/dev/shm``, hence ``btl self,tcp``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.conftest import OMPY

from .cluster import SlurmCluster, SlurmUnavailableError

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

WHERE = Path(__file__).parent / "programs" / "where.py"
HOSTS = ["h1", "h1", "h2", "h2", "h3", "h3"]


@pytest.fixture(scope="session")
def slurm_netns(netns_cluster_factory) -> Iterator[tuple[SlurmCluster, object]]:
    multihost = netns_cluster_factory((1, 1, 1), sshd=False)
    slurm = SlurmCluster(hosts=multihost.hosts)
    try:
        slurm.start()
    except SlurmUnavailableError as why:
        pytest.skip(f"no private Slurm cluster here: {why}")
    try:
        yield slurm, multihost
    finally:
        slurm.stop()
        assert not slurm.leftovers(), "processes of the Slurm cluster outlived it"


def reports(stdout: str) -> dict[int, dict]:
    return {
        report["rank"]: report
        for report in (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))
    }


def received(multihost, before: dict) -> dict[str, int]:
    grew: dict[str, int] = {}
    for (host, nic), (rx, _tx) in multihost.cluster.nic_counters().items():
        grew[host] = grew.get(host, 0) + rx - before[(host, nic)][0]
    return grew


def check_ring(found: dict[int, dict], direct: bool) -> None:
    assert sorted(found) == list(range(6))
    assert [found[r]["host"] for r in range(6)] == HOSTS
    for rank, report in found.items():
        assert report["direct"] is direct
        assert report["node"] == report["slurm_node"] == report["host"]
        assert report["ring"] and report["left"] == (rank - 1) % 6 and report["total"] == 15


def test_ompy_run_in_salloc_across_namespace_hosts(slurm_netns, slurm_jobs):
    slurm, multihost = slurm_netns
    before = multihost.cluster.nic_counters()
    command = [OMPY, "run", "--mca", "btl", "self,tcp", sys.executable, str(WHERE)]
    result = slurm_jobs(slurm).run(
        ["salloc", "--immediate=20", "-N3", "--ntasks-per-node=2", *command]
    )
    assert result.returncode == 0, result.stderr
    check_ring(reports(result.stdout), direct=False)
    grew = received(multihost, before)
    assert all(grew[host] >= 1 << 20 for host in ("h1", "h2", "h3")), grew


def test_srun_direct_launch_across_namespace_hosts(slurm_netns, slurm_jobs, tmp_path):
    slurm, multihost = slurm_netns
    before = multihost.cluster.nic_counters()
    command = [
        "srun",
        "--mpi=pmi2",
        "-N3",
        "--ntasks-per-node=2",
        f"--output={tmp_path}/task%t.out",
    ]
    result = slurm_jobs(slurm).run(
        [*command, sys.executable, str(WHERE)], env={"OMPY_MCA_btl": "self,tcp"}
    )
    output = "".join(p.read_text() for p in sorted(tmp_path.glob("task*.out")))
    assert result.returncode == 0, result.stderr + output
    check_ring(reports(output), direct=True)
    grew = received(multihost, before)
    assert all(grew[host] >= 1 << 20 for host in ("h1", "h2", "h3")), grew
