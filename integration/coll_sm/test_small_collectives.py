"""The hot small collectives through ``ompy run``: results, objects, p2p around them, idle CPU.

One job per case runs ``programs/small_collectives.py`` (every check of the hot loop's
Barrier/Bcast/Reduce/Allreduce, in the plain and the general argument forms, on 2 to 16 ranks,
oversubscribed beyond 2); the ``ompy`` fixture checks afterwards that no process and no
/dev/shm file of the job is left.  The btl does not carry coll sm's data, but the p2p section
runs over it, so both are covered.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = str(Path(__file__).parent / "programs" / "small_collectives.py")
SECTIONS = {"hot", "objects", "p2p", "late"}
#: A rank waiting 1.5 s for a late peer yields, then sleeps: far below a busy processor.
MAX_WAIT_CPU = 0.25
pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(
    ("ranks", "btl"),
    [(2, "self,sm"), (4, "self,sm"), (16, "self,sm"), (3, "self,tcp")],
    ids=["2-sm", "4-sm", "16-sm", "3-tcp"],
)
def test_small_collectives_are_right_and_a_waiting_rank_stays_idle(ompy, ranks, btl):
    result = ompy.run(
        ["-n", str(ranks), "--oversubscribe", "--mca", "btl", btl, sys.executable, PROGRAM],
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ranks"] == ranks
    assert report["by"] == "sm"
    assert all(set(per_rank) == SECTIONS for per_rank in report["checks"])
    assert all(per_rank["p2p"] == 20 for per_rank in report["checks"])
    waiting = report["cpu"][:-1]  # the last rank is the late one (it sleeps)
    assert max(waiting) < MAX_WAIT_CPU, report["cpu"]
