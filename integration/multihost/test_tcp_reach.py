"""The tcp BTL between namespace hosts: probing, pairing by NIC, traffic on the right NICs.

Hosts ``h1`` and ``h2`` have two NICs each (``10.77.0.x`` and ``10.77.1.x``), ``h3`` one. Two
ranks (``tcp_reach_worker.py``) run on two hosts, meet through a directory modex and reach each
other through the BML as MPI does; the NICs' byte counters show where the bytes went.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .netns import end_processes

WORKER = Path(__file__).with_name("tcp_reach_worker.py")
LAYOUT = (2, 2, 1)
MIB = 1 << 20
pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def hosts(netns_cluster_factory):
    return netns_cluster_factory(nics=LAYOUT, sshd=True)  # shared with test_doctor


def run_pair(
    hosts, tmp_path: Path, on: tuple[str, str], volume: int, params=None, *, params1=None
) -> list[dict]:
    """Rank 0 on ``on[0]`` with ``params``, rank 1 on ``on[1]`` (``params1``, else the same):
    their reports, or a failure with their stderr."""
    directory = tmp_path / "modex"
    directory.mkdir()
    settings = [params or {}, params if params1 is None else params1]
    processes = [
        subprocess.Popen(
            hosts.host(host).command(
                [
                    *(sys.executable, str(WORKER), str(rank), str(directory), str(volume)),
                    json.dumps(settings[rank] or {}),
                ]
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, host in enumerate(on)
    ]
    reports = []
    try:
        for rank, process in enumerate(processes):
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, f"rank {rank} on {on[rank]} failed:\n{err}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        end_processes([p.pid for p in processes if p.poll() is None], grace=1.0)
    return reports


def sent_bytes(before, after, host: str, nic: str) -> int:
    return after[(host, nic)][1] - before[(host, nic)][1]


def test_two_nics_each_pair_by_subnet_and_carry_their_share(hosts, tmp_path):
    before = hosts.cluster.nic_counters()
    reports = run_pair(hosts, tmp_path, ("h1", "h2"), 8 * MIB)
    after = hosts.cluster.nic_counters()
    for report, peer in zip(reports, (2, 1), strict=True):
        pairs = {name: address for name, _weight, (address, _port) in report["send"]}
        assert pairs == {"tcp:eth0:0": f"10.77.0.{peer}", "tcp:eth1:0": f"10.77.1.{peer}"}
        # veth links report 10 Gbit/s each: equal weights.
        assert [weight for _n, weight, _a in report["send"]] == [0.5, 0.5]
        assert report["reasons"] == {}
        assert report["received"] == {"tcp:eth0:0": 8 * MIB, "tcp:eth1:0": 8 * MIB}
    # Each rank's 8 MiB per module left through that module's own NIC, not loopback.
    for host in ("h1", "h2"):
        for nic in ("eth0", "eth1"):
            assert sent_bytes(before, after, host, nic) >= 8 * MIB, (host, nic)


def test_a_nic_without_a_counterpart_does_not_reach_the_peer_and_says_why(hosts, tmp_path):
    reports = run_pair(hosts, tmp_path, ("h1", "h3"), MIB)
    h1, h3 = reports
    assert [(name, address) for name, _w, (address, _p) in h1["send"]] == [
        ("tcp:eth0:0", "10.77.0.3")
    ]
    # h1's eth1 has no route to h3: the probe, bound to eth1, cannot leave through eth0.
    reason = h1["reasons"]["tcp:eth1:0"]
    assert reason.startswith("no address of rank 1 answered from eth1 (10.77.1.1/24): 10.77.0.3:")
    assert [(name, address) for name, _w, (address, _p) in h3["send"]] == [
        ("tcp:eth0:0", "10.77.0.1")
    ]
    assert h1["received"] == {"tcp:eth0:0": MIB} and h3["received"] == {"tcp:eth0:0": MIB}


def test_interfaces_can_be_chosen_by_name_or_network(hosts, tmp_path):
    by_network = {"btl_tcp_if_include": "10.77.1.0/24"}
    reports = run_pair(hosts, tmp_path, ("h1", "h2"), MIB, by_network)
    assert [[name for name, _w, _a in r["send"]] for r in reports] == [["tcp:eth1:0"]] * 2
    by_name = {"btl_tcp_if_exclude": "lo,eth1"}
    (tmp_path / "second").mkdir()
    reports = run_pair(hosts, tmp_path / "second", ("h1", "h2"), MIB, by_name)
    assert [[name for name, _w, _a in r["send"]] for r in reports] == [["tcp:eth0:0"]] * 2


def test_bandwidth_rules_weight_the_stripes(hosts, tmp_path):
    params = {"btl_tcp_if_bandwidth": "eth0:3000,10.77.1.0/24:1000"}
    reports = run_pair(hosts, tmp_path, ("h1", "h2"), MIB, params)
    for report in reports:
        assert [(name, weight) for name, weight, _a in report["send"]] == [
            ("tcp:eth0:0", 0.75),
            ("tcp:eth1:0", 0.25),
        ]


def test_a_peer_reachable_by_no_interface_is_an_error_naming_what_was_tried(hosts, tmp_path):
    # h1 uses only eth1, h3 has only eth0: no NIC of h1 reaches h3.
    params = {"btl_tcp_if_include": "eth1,lo", "btl_tcp_probe_timeout": 1}
    h1, h3 = run_pair(
        hosts, tmp_path, ("h1", "h3"), MIB, params, params1={"btl_tcp_probe_timeout": 1}
    )
    assert "no BTL module can send to rank 1 of job job on node1" in h1["unreachable"]
    assert (
        "tcp:eth1:0: no address of rank 1 answered from eth1 (10.77.1.1/24): 10.77.0.3:"
        in h1["unreachable"]
    )
    # h3 may or may not reach h1's eth1 address: bound to eth0 without a route, the kernel
    # tries it on that link, and h1 answers ARP for all its addresses on every NIC. Either way
    # the run ends at add_procs for both.
    assert h3.get("peer_unreachable") or "no BTL module can send to rank 0" in h3["unreachable"]


def test_one_include_list_can_name_networks_some_hosts_lack(hosts, tmp_path):
    # h3 has no NIC on 10.77.1.0/24: it uses what it has (and warns), h1 both.
    params = {"btl_tcp_if_include": "10.77.0.0/24,10.77.1.0/24"}
    h1, h3 = run_pair(hosts, tmp_path, ("h1", "h3"), MIB, params)
    assert [name for name, _w, _a in h1["send"]] == ["tcp:eth0:0"]
    assert [name for name, _w, _a in h3["send"]] == ["tcp:eth0:0"]
    assert h1["received"] == {"tcp:eth0:0": MIB} and h3["received"] == {"tcp:eth0:0": MIB}
