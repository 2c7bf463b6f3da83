"""``MPI.UNIVERSE_SIZE`` is the room the allocation has: the slots of ``--host``, at least
the job's size (what ``Comm.Spawn`` may fill)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"

pytestmark = pytest.mark.timeout(120)


def universes(result) -> dict[int, tuple[int, int]]:
    assert result.returncode == 0, result.stderr
    seen = {}
    for line in result.stdout.splitlines():
        entry = json.loads(line)
        seen[entry["rank"]] = (entry["universe"], entry["dup"])
    return seen


@pytest.mark.parametrize(
    ("hosts", "np", "universe"), [("localhost:5", 2, 5), ("localhost:1", 1, 1)]
)
def test_the_universe_is_the_slots_of_the_hosts(ompy, hosts, np, universe):
    result = ompy.run(
        ["--host", hosts, "-n", str(np), sys.executable, str(PROGRAMS / "universe.py")],
        timeout=90,
    )
    assert universes(result) == {rank: (universe, universe) for rank in range(np)}


def test_an_oversubscribed_job_is_its_own_universe(ompy):
    result = ompy.run(
        [
            "--host",
            "localhost:2",
            "-n",
            "3",
            "--oversubscribe",
            sys.executable,
            str(PROGRAMS / "universe.py"),
        ],
        timeout=90,
    )
    assert universes(result) == {rank: (3, 3) for rank in range(3)}
