"""The repository's point-to-point and collective suites across 3 hosts x 2 ranks over ssh.

The same programs the one-host tests run (``integration/p2p/programs/p2p_suite.py``,
``integration/coll/programs/coll_suite.py``) run here with the default transports, launched
from ``h1`` through plm ssh onto the namespace hosts ``h1 h2 h3`` (two NICs each).  Each job
must report every rank, and two things prove that the traffic between hosts really went over
TCP between the namespaces' addresses: the PML's own listing of how each rank reaches each peer
(``pml_base_verbose``: ``sm`` within a host, ``tcp`` over a host NIC ``eth<k>`` between hosts)
and the hosts' NIC byte counters, which must have grown by at least what the suite sends
across hosts (the namespaces share ``/dev/shm``, so nothing else would show it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .test_ssh_launch import ENDPOINT, ENDPOINTS, SIX, received, reports

INTEGRATION = Path(__file__).parents[1]
P2P_SUITE = INTEGRATION / "p2p" / "programs" / "p2p_suite.py"
COLL_SUITE = INTEGRATION / "coll" / "programs" / "coll_suite.py"
VERBOSE = ["--mca", "pml_base_verbose", "10"]
#: The largest message of the p2p suite: its ring Sendrecv carries it across each host pair.
LARGEST = 4 << 20
#: Messages between ranks of different hosts (source, destination, tag, bytes), both sides of
#: the tcp eager limit (128 KiB of data), with one pair within a host.
SCHEDULES = [
    [[0, 5, 1, 140_000], [5, 0, 2, 100], [2, 3, 0, 4090], [1, 4, 3, 131_072]],
    [[3, 0, 7, 1], [4, 1, 7, 200_000], [0, 2, 9, 0], [2, 0, 9, 65_537]],
]

#: Every section of the p2p suite (a missing one never ran).
SECTIONS = {
    *("sizes", "wildcards", "modes", "completions", "objects", "probes", "truncation"),
    *("proc_null", "cancel", "errors", "comms", "schedules"),
}

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


def check_routes(stderr: str) -> None:
    """Every rank reaches the ranks of its own host through sm, the others through tcp over a
    host NIC (the layout is ``h1:2,h2:2,h3:2``: rank ``r`` runs on host ``r // 2``)."""
    routes: dict[int, dict[int, str]] = {}
    for pid, listing in ENDPOINTS.findall(stderr):
        routes[int(pid)] = {int(r): m for r, m in ENDPOINT.findall(listing)}
    assert len(routes) == 6, stderr
    for peers in routes.values():
        assert sorted(peers) == list(range(6)), peers
        own = next(rank for rank, modules in peers.items() if modules == "self")
        for rank, modules in peers.items():
            if rank == own:
                continue
            if rank // 2 == own // 2:
                assert modules == "sm", peers
            else:
                assert modules.startswith("tcp:eth"), peers


def test_the_p2p_suite_across_three_hosts(cluster, hosts):
    schedules = hosts.tmpdir.parent / "schedules.json"
    schedules.write_text(json.dumps(SCHEDULES))
    program = [sys.executable, str(P2P_SUITE), str(schedules), str(LARGEST)]
    before = cluster.cluster.nic_counters()
    result = hosts.ompy_run(
        "h1",
        [*SIX, *VERBOSE, "-x", "P2P_SUITE_NODE_SIZE=2", *program],
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(6)), result.stdout
    for report in found.values():
        sections = {name.split(":")[0] for name in report["checks"]}
        assert sections == SECTIONS, report
        assert {"schedules:0", "schedules:1"} <= set(report["checks"])
        assert f"sizes:{LARGEST}" in report["checks"]
        assert "comms:Split_type" in report["checks"]
    check_routes(result.stderr)
    # Each host's first rank gets the ring's largest message from the previous host.
    grew = received(before, cluster.cluster.nic_counters())
    assert all(grew[host] >= LARGEST for host in ("h1", "h2", "h3")), grew


def test_the_collective_suite_across_three_hosts_with_routes(cluster, hosts):
    before = cluster.cluster.nic_counters()
    result = hosts.ompy_run("h1", [*SIX, *VERBOSE, sys.executable, str(COLL_SUITE)], timeout=240)
    assert result.returncode == 0, result.stderr
    assert sorted(reports(result.stdout)) == list(range(6)), result.stdout
    check_routes(result.stderr)
    grew = received(before, cluster.cluster.nic_counters())
    assert all(grew[host] >= 4 << 20 for host in ("h1", "h2", "h3")), grew
