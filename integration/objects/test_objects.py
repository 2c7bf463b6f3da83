"""Attributes and handles through ``ompy run``: one 3-rank job with the real PML and transports.

``programs/objects_suite.py`` (its docstring lists the steps) prints a report per rank and a
line per delete callback run by ``MPI.Finalize``; the job must end cleanly (exit code 0, nothing
left behind: the ``ompy`` fixture checks that).
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


def test_attributes_and_handles_on_three_ranks(ompy):
    result = ompy.run(
        ["-n", "3", "--oversubscribe", sys.executable, str(PROGRAMS / "objects_suite.py")],
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
        assert report["same_objects"] == [True] * 12
        assert report["copies"] == ["Comm", True, True]  # a new handle of its class
        assert report["bcast_int"] is True
        assert "cannot serialize" in report["user_comm"]
        assert report["integers"] == [True, True, True, True, [0, 1, 2]]
        # COMM_SELF's attributes first, the last set first, then COMM_WORLD's; all while
        # COMM_WORLD still communicates.
        assert finalized[rank] == [
            ["self set last", 1, 3],
            ["self set first", 1, 3],
            ["world", 3, 3],
        ]
