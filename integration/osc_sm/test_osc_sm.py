"""osc sm through ``ompy run``: shared windows in every mode on 1-4 ranks, over sm and tcp.

Each job runs the battery of ``programs/osc_sm_suite.py`` (the world, COMM_SELF and both
halves of a split); the ``ompy`` fixture checks afterwards that no process and no /dev/shm file
of the job is left, which also covers a rank that raised or was SIGKILLed while windows, locks
and views of their memory were alive.  The point-to-point transport only carries the window
set-up (and the suite's own messages); RMA itself goes through the shared segment.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
SUITE = str(PROGRAMS / "osc_sm_suite.py")
CRASH = str(PROGRAMS / "osc_sm_crash.py")
SECTIONS = {"provider", "unlinked", "shared", "allocate", "derived", "counter", "cas", "model"}
pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_every_mode_on_world_self_and_split(ompy, ranks: int, btl: str) -> None:
    result = ompy.run(
        [
            "-n",
            str(ranks),
            "--oversubscribe",
            "--mca",
            "btl",
            btl,
            sys.executable,
            SUITE,
            str(ranks),
        ],
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ranks"] == ranks
    for per_rank in report["checks"]:
        assert set(per_rank) == SECTIONS
        # world, self and the split half each checked 3 windows: all served by sm
        assert per_rank["provider"] == 9
        assert per_rank["counter"] >= 3


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_leaves_no_segment_behind(ompy, how: str) -> None:
    result = ompy.run(["-n", "4", "--oversubscribe", sys.executable, CRASH, how], timeout=120)
    assert result.returncode != 0
    assert result.stdout.count("windows made") >= 2
    if how == "raise":
        assert "rank 1 fails on purpose" in result.stderr
