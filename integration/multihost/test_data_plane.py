"""MPI across namespace hosts with the default transports: shared memory within a host, tcp
between hosts (the hosts share /dev/shm, so only node identity keeps sm off between them), and
a long message to a peer on another host striped over both NICs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "data_plane.py"
MIB = 1 << 20
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def reports(stdout: str) -> dict[int, dict]:
    return {
        report["rank"]: report
        for report in (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))
    }


def tx(before, after, host: str, nic: str) -> int:
    return after[(host, nic)][1] - before[(host, nic)][1]


@pytest.mark.parametrize("btl", [None, "self,sm,tcp"])
def test_sm_within_a_host_tcp_between_hosts_striped_over_both_nics(cluster, hosts, btl):
    selection = ["--mca", "btl", btl] if btl else []
    before = cluster.cluster.nic_counters()
    result = hosts.ompy_run(
        "h1",
        ["--host", "h1:2,h2:2", *selection, sys.executable, str(PROGRAM), str(32 * MIB)],
        timeout=180,
    )
    after = cluster.cluster.nic_counters()
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert [found[r]["host"] for r in range(4)] == ["h1", "h1", "h2", "h2"]
    tcp_pair = [["tcp:eth0:0", 0.5], ["tcp:eth1:0", 0.5]]
    for rank, report in found.items():
        # COMM_TYPE_SHARED follows the same node identity: the two ranks of this host.
        assert report["shared"] == [rank - rank % 2, rank - rank % 2 + 1], report
        for peer, endpoint in report["peers"].items():
            same_host = int(peer) // 2 == rank // 2
            if same_host:
                assert endpoint["modules"] == ["sm"], (rank, peer, endpoint)
            else:
                assert sorted(endpoint["send"]) == tcp_pair, (rank, peer, endpoint)
    # Rank 0 sent 32 MiB to each of ranks 2 and 3 on h2: about half left through each NIC.
    for nic in ("eth0", "eth1"):
        assert tx(before, after, "h1", nic) >= 24 * MIB, (nic, before, after)
