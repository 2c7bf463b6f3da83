"""Point-to-point through ``ompy run`` with the real PML, as a user runs an mpi4py program."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(240)

message = st.tuples(
    st.integers(0, 7), st.integers(0, 7), st.integers(0, 3), st.sampled_from([0, 1, 100, 70_000])
)
schedules = st.lists(st.lists(message, min_size=1, max_size=12), min_size=6, max_size=6)


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


@pytest.mark.slow
@settings(max_examples=1, deadline=None, suppress_health_check=list(HealthCheck))
@given(schedule_set=schedules)
def test_every_call_over_tcp_with_random_schedules(schedule_set, ompy):
    """One 4-rank job over self,tcp checks every call, 0 B to 64 MiB, and six random schedules."""
    path = ompy.tmpdir / "schedules.json"
    path.write_text(json.dumps(schedule_set))
    result = ompy.run(
        [
            "-n",
            "4",
            "--oversubscribe",
            "--mca",
            "btl",
            "self,tcp",
            sys.executable,
            str(PROGRAMS / "p2p_suite.py"),
            str(path),
        ],
        timeout=200,
    )
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == [0, 1, 2, 3], result.stdout
    assert all(report["checked"] >= 25 for report in found.values()), found
