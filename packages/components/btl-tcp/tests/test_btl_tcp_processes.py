"""btl/tcp between two real processes: data integrity, order, connection rules, failures.

Each test starts two ranks (``tcp_worker.py``) that meet through a directory modex and select the
tcp BTL as the run-time will.  Every test has a timeout, and checks that both processes are gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("tcp_worker.py")
pytestmark = pytest.mark.timeout(120)


def run_pair(directory: Path, scenario: str, params=({}, {}), timeout: float = 90) -> list[str]:
    """Run both ranks of ``scenario``; return their stdout, failing with their stderr."""
    ranks = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(rank), scenario, str(directory), json.dumps(p)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for rank, p in enumerate(params)
    ]
    outputs = []
    try:
        for rank, process in enumerate(ranks):
            out, err = process.communicate(timeout=timeout)
            assert process.returncode == 0, f"rank {rank} failed:\n{err}"
            outputs.append(out)
    finally:
        for process in ranks:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert all(process.poll() is not None for process in ranks)
    return outputs


def test_frames_of_every_size_up_to_64_mib_arrive_intact_and_in_order(tmp_path):
    big = {"btl_tcp_max_send_size": 80 << 20}
    assert run_pair(tmp_path, "sizes", (big, big)) == ["rank 0: sizes ok\n", "rank 1: sizes ok\n"]


def test_many_small_frames_flow_both_ways_at_once(tmp_path):
    run_pair(tmp_path, "both_ways")


def test_simultaneous_connects_leave_exactly_one_connection(tmp_path):
    run_pair(tmp_path, "simultaneous")


def test_a_peer_with_the_wrong_secret_is_refused(tmp_path):
    run_pair(tmp_path, "wrong_secret", ({"secret": "ab" * 16}, {"secret": "cd" * 16}))


def test_a_peer_that_dies_is_reported_to_the_error_callback(tmp_path):
    run_pair(tmp_path, "peer_dies")


def test_frames_queued_during_the_handshake_are_delivered_by_finalize(tmp_path):
    run_pair(tmp_path, "finalize_flushes", ({"btl_tcp_finalize_timeout": 10}, {}))


def test_a_get_from_a_peer_that_dies_mid_transfer_fails_with_a_clear_error(tmp_path):
    run_pair(tmp_path, "get_peer_dies")
