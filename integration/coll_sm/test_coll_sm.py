"""coll sm through ``ompy run``: every operation on 1..9 ranks, large messages, exclusion, crashes.

Each job runs the whole battery of ``programs/coll_sm_suite.py`` once (the world and both halves
of a split at every size); the ``ompy`` fixture checks afterwards that no process and no
/dev/shm file of the job is left, which also covers a rank that raised or was SIGKILLed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
SUITE = str(PROGRAMS / "coll_sm_suite.py")
CRASH = str(PROGRAMS / "coll_sm_crash.py")
SECTIONS = {
    "unlinked",
    "providers",
    "barrier",
    "bcast",
    "allreduce",
    "noncommutative",
    "reduce",
    "p2p",
}
pytestmark = pytest.mark.timeout(240)


def run_suite(ompy, ranks: int, *args: str, mca: tuple[str, ...] = ()) -> list[dict]:
    result = ompy.run(
        ["-n", str(ranks), "--oversubscribe", *mca, sys.executable, SUITE, *args], timeout=200
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["ranks"] == ranks
    return report["checks"]


def test_every_operation_on_every_size_from_1_to_9_ranks(ompy):
    # 9 ranks on 2 cores: oversubscribed; communicators of 1..9 ranks through Split.
    checks = run_suite(ompy, 9)
    assert all(set(per_rank) == SECTIONS for per_rank in checks)
    # every rank ran the battery on the world and on its half at each of the 9 splits
    assert all(per_rank["p2p"] == 10 for per_rank in checks)


def test_messages_of_several_mebibytes_cross_many_fragments(ompy):
    checks = run_suite(ompy, 3, "--big")
    assert all(set(per_rank) == SECTIONS for per_rank in checks)


def test_excluded_with_coll_caret_sm_and_results_stay_right(ompy):
    checks = run_suite(ompy, 2, "--no-sm", mca=("--mca", "coll", "^sm"))
    assert all(per_rank["providers"] == 4 * 3 for per_rank in checks)


@pytest.mark.parametrize("how", ["raise", "kill"])
def test_a_failing_rank_leaves_no_segment_behind(ompy, how):
    result = ompy.run(["-n", "4", "--oversubscribe", sys.executable, CRASH, how], timeout=120)
    assert result.returncode != 0
    assert result.stdout.count("collectives done") >= 2
    if how == "raise":
        assert "rank 1 fails on purpose" in result.stderr
