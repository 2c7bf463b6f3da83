"""Requests and statuses through ``ompy run``: cancels, generalized requests, None as IN_PLACE.

One 3-rank job per transport runs ``programs/requests_suite.py`` (its docstring lists the
steps) with the real PML: over shared memory (the default) and over TCP only
(``--mca btl self,tcp``).  Every check must pass on every rank, and the job ends cleanly: exit
code 0, no process, session directory or shared-memory file left behind (the ``ompy`` fixture
checks that).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(240)
MODES = ("Isend", "Issend")


@pytest.mark.parametrize("btl", [[], ["--mca", "btl", "self,tcp"]], ids=["sm", "tcp"])
def test_cancels_generalized_requests_statuses_and_none_as_in_place(ompy, btl):
    result = ompy.run(
        ["-n", "3", "--oversubscribe", *btl, sys.executable, str(PROGRAMS / "requests_suite.py")],
        timeout=200,
    )
    assert result.returncode == 0, result.stderr
    reports = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        reports[report["rank"]] = report["checks"]
    assert sorted(reports) == [0, 1, 2], result.stdout + result.stderr
    failed = {
        (rank, name): detail
        for rank, checks in reports.items()
        for name, (passed, detail) in checks.items()
        if not passed
    }
    assert not failed, failed
    names = set().union(*reports.values())
    cancels = {f"cancel:{size}:{mode}" for size in ("eager", "rendezvous") for mode in MODES}
    assert cancels <= names
    assert {"grequest:in waitall", "get_status:variants", "none:Alltoallw", "none:Gather"} <= names
