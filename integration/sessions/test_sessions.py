"""MPI-4 sessions through ``ompy run``: sessions and the world model share one instance.

One 3-rank job runs ``programs/sessions_suite.py`` (its docstring lists the steps) with the
real PML and transports, and ends cleanly: exit code 0, no process, session directory or
shared-memory file left behind (the ``ompy`` fixture checks that).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(180)


def test_sessions_and_the_world_model_share_one_instance(ompy):
    result = ompy.run(
        ["-n", "3", "--oversubscribe", sys.executable, str(PROGRAMS / "sessions_suite.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr
    reports = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        reports[report["rank"]] = report
    assert sorted(reports) == [0, 1, 2], result.stdout + result.stderr
    for rank, report in reports.items():
        previous = (rank - 1) % 3
        assert report["initialized_by_session"] is False
        assert report["thread_level"] == "MPI_THREAD_MULTIPLE"
        assert report["psets"] == ["mpi://WORLD", "mpi://SELF", "mpix://SHARED"]
        assert report["world_size"] == "3"
        assert report["whole"] == [rank, 3, previous, 3, 0]
        assert report["alone"] == [1, f"me {rank}"]
        assert report["world_finalized"] is True
        assert report["whole_after"] == [previous, 3, 0, 0, 0, 0]
        assert report["late"] == [rank, previous, 3, 0]
        assert "cannot be initialized again" in report["restart"]
    assert reports[2]["big"] is True
    # left = world ranks (0, 1), right = (2, 1): ranks in the new communicators, then the ring
    assert reports[0]["overlapping"] == {"left": [0, 2, 1, 1, 0]}
    assert reports[1]["overlapping"] == {"left": [1, 2, 0, 1, 0], "right": [1, 2, 0, 1, 0]}
    assert reports[2]["overlapping"] == {"right": [0, 2, 1, 1, 0]}
    # pair = world ranks (2, 0), evens = (0, 2): [rank, ring] in each
    assert reports[2]["pair"] == [0, 1, 1, 0, 1, 0, 1, 0]
    assert reports[0]["pair"] == [1, 0, 1, 0, 0, 1, 1, 0]
    assert reports[1]["pair"] == 42
