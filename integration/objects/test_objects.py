"""Error handlers, error classes and Info through ``ompy run``.

``programs/objects_suite.py`` (its docstring lists the checks) runs on 3 ranks with the real
PML and transports and must end cleanly; ``programs/fatal.py`` shows that ERRORS_ARE_FATAL ends
the whole job with the error message and a non-zero exit code.  The ``ompy`` fixture checks
that no process, session directory or shared-memory file is left behind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(180)

ERR_RANK = 6
ERR_ARG = 13
ERR_TRUNCATE = 15


def test_handlers_error_classes_and_info_in_a_three_rank_job(ompy):
    result = ompy.run(
        ["-n", "3", "--oversubscribe", sys.executable, str(PROGRAMS / "objects_suite.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr
    reports = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        reports[report["rank"]] = report
    assert sorted(reports) == [0, 1, 2], result.stdout + result.stderr
    for rank, report in reports.items():
        assert report["hints"] == [
            ["mpi_assert_no_any_tag", "true"],
            ["ompy_rank_free", "x"],
            ["mpi_assert_exact_length", "true"],
        ]
        assert report["hints_same_everywhere"] is True
        assert report["errhandler_is_return"] is True
        assert report["truncate"] == [ERR_TRUNCATE, True]
        assert report["user_raised"] is True
        assert report["user_calls"] == [[True, ERR_RANK, 3]]
        assert report["added"] == [True, True, True, f"library failure on rank {rank}", True]
        assert report["env"] == ["3", True]
        assert report["session"] == [True, ["Session", ERR_ARG], ERR_ARG]


def test_errors_are_fatal_ends_the_job_with_the_message(ompy):
    result = ompy.run(
        ["-n", "2", "--oversubscribe", sys.executable, str(PROGRAMS / "fatal.py")],
        timeout=150,
    )
    assert result.returncode == ERR_RANK  # the job ends with the error code
    assert "still alive" not in result.stdout and "impossible" not in result.stdout
    assert "MPI_ERR_RANK" in result.stderr, result.stderr
    assert "MPI_ERRORS_ARE_FATAL" in result.stderr and "Intracomm.Send" in result.stderr
