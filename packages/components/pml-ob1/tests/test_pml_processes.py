"""ob1 between real processes over loopback TCP: sizes up to 64 MiB, striping, ANY_SOURCE,
an intercommunicator (peers addressed through ``remote_world_ranks``).

Each test starts the ranks (``pml_worker.py``), which meet through a directory modex and set
up their PML as MPI init does.  Every test has a timeout and checks that no rank is left over.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pml_worker import SIZES

WORKER = Path(__file__).with_name("pml_worker.py")
pytestmark = pytest.mark.timeout(180)


def run_ranks(directory: Path, size: int, scenario: str, params: dict, timeout: float = 150):
    """Run every rank of ``scenario``; return each rank's JSON report, failing with stderr."""
    ranks = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                str(rank),
                str(size),
                scenario,
                str(directory),
                json.dumps(params),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank in range(size)
    ]
    reports = []
    try:
        for rank, process in enumerate(ranks):
            out, err = process.communicate(timeout=timeout)
            assert process.returncode == 0, f"rank {rank} failed:\n{err}"
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert all(process.poll() is not None for process in ranks), "a rank was left running"
    return reports


def test_messages_of_every_size_up_to_64_mib_arrive_intact_striped_over_two_links(tmp_path):
    # Fragments, not RDMA: tcp offers get, and a get would carry the long messages instead.
    sender, receiver = run_ranks(tmp_path, 2, "sizes", {"btl_tcp_links": 2, "pml_ob1_use_rdma": 0})
    assert receiver == {"received": len(SIZES)}
    carried = sender["carried"]
    assert len(carried) == 2 and all(carried), f"both links must carry data: {carried}"
    assert min(carried) > 0.4 * max(carried), f"equal bandwidth, shares {carried}"


def test_any_source_keeps_each_senders_order_among_three_processes(tmp_path):
    reports = run_ranks(tmp_path, 3, "any_source", {})
    assert reports == [{"matched": 14}, {"sent": 8}, {"sent": 7}]


def test_an_intercommunicator_addresses_the_remote_group(tmp_path):
    reports = run_ranks(tmp_path, 3, "inter", {})
    assert reports == [{"answers": 2}, {"received": 2}, {"received": 2}]
