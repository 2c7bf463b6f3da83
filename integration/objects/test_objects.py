"""Attributes, handles, error handlers, error classes and Info through ``ompy run``.

Each program runs with the real PML and transports:

- ``programs/objects_suite.py`` (attributes and handles; its docstring lists the steps) prints a
  report per rank and a line per delete callback run by ``MPI.Finalize`` on 3 ranks;
- ``programs/errors_suite.py`` (error handlers, error classes and Info; its docstring lists the
  checks) prints a report per rank on 3 ranks;
- ``programs/fatal.py`` shows that ERRORS_ARE_FATAL ends the whole job with the error message
  and a non-zero exit code.

The first two must end cleanly (exit code 0); the ``ompy`` fixture checks that no process,
session directory or shared-memory file is left behind.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(180)

TAG_UB = 2**31 - 1
ERR_LASTCODE = 92
ERR_RANK = 6
ERR_ARG = 13
ERR_TRUNCATE = 15


def test_attributes_and_handles_on_three_ranks(ompy):
    result = ompy.run(
        ["--host", "localhost:3", "-n", "3", sys.executable, str(PROGRAMS / "objects_suite.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr
    reports, finalized = {}, {0: [], 1: [], 2: []}
    for line in result.stdout.splitlines():
        entry = json.loads(line)
        if "finalize" in entry:
            finalized[entry["rank"]].append([entry["finalize"], entry["size"], entry["world"]])
        else:
            reports[entry["rank"]] = entry
    assert sorted(reports) == [0, 1, 2], result.stdout + result.stderr
    for rank, report in reports.items():
        assert report["predefined"] == {
            "TAG_UB": TAG_UB,
            "HOST": -2,  # PROC_NULL
            "IO": -1,  # ANY_SOURCE
            "WTIME_IS_GLOBAL": 0,
            "APPNUM": 0,
            "UNIVERSE_SIZE": 3,
            "LASTUSEDCODE": ERR_LASTCODE,
        }
        assert report["predefined_types"] == ["int"]
        inherited = dict(report["predefined"], LASTUSEDCODE=None)
        assert report["dup_predefined"] == inherited
        assert report["self_tag_ub"] is None
        assert report["copied"] == [[rank, "copied"], [rank, "copied", "copied"], 3]
        assert report["events"] == [
            ["copy", 3, [rank]],
            ["copy", 3, [rank, "copied"]],
            ["delete", [rank, "copied", "copied"]],
            ["delete", [rank, "copied"]],
            ["delete", [rank]],
        ]
        assert report["keyval_freed"] is True
        assert report["same_objects"] == [True] * 18
        assert report["copies"] == ["Comm", True, True]  # a new handle of its class
        assert report["bcast_int"] is True
        assert "cannot serialize" in report["user_comm"]
        assert report["user_info"] == ["Info", [["from", str((rank - 1) % 3)]], True]
        assert report["integers"] == [True] * 6 + [[0, 1, 2], [0, 1], [0, 1, 2]]
        # COMM_SELF's attributes first, the last set first, then COMM_WORLD's; all while
        # COMM_WORLD still communicates.
        assert finalized[rank] == [
            ["self set last", 1, 3],
            ["self set first", 1, 3],
            ["world", 3, 3],
        ]


def test_handlers_error_classes_and_info_in_a_three_rank_job(ompy):
    result = ompy.run(
        ["-n", "3", "--oversubscribe", sys.executable, str(PROGRAMS / "errors_suite.py")],
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
