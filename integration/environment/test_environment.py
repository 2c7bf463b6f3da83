"""Environment calls through ``ompy run``: the program initializes MPI itself (``ompy.rc``),
buffered sends go through a communicator's own buffer and are flushed, and ``Alloc_mem``
memory receives messages.  One 2-rank job runs ``programs/environment_suite.py`` (its
docstring lists the steps) and ends cleanly (the ``ompy`` fixture checks for leftovers)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ompy.ompi import __version__ as ompi_version

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(180)


def test_environment_buffered_sends_and_alloc_mem_in_a_job(ompy):
    result = ompy.run(
        ["-n", "2", sys.executable, str(PROGRAMS / "environment_suite.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr
    reports = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        reports[report["rank"]] = report
    assert sorted(reports) == [0, 1], result.stdout + result.stderr
    version = [int(part) for part in ompi_version.split(".")[:3]]
    for report in reports.values():
        assert report["initialized_at_import"] is False
        assert report["provided"] == 2  # THREAD_SERIALIZED
        assert report["size"] == 2
        assert report["vendor"] == ["ompy", version]
        assert report["version"] == [4, 1]
        assert report["library"].startswith("ompy ")
        assert report["machine"] == "true"
        assert report["finalized"] is True
    sender, receiver = reports[0], reports[1]
    assert sender["flushed_before_receive"] is False
    assert sender["detached_is_attached"] is True
    assert sender["world_bsend"] is True
    assert receiver["small"] == [True] * 4
    assert receiver["large"] is True and receiver["aligned"] is True
    assert receiver["freed"] == [0, 0]
