"""``ompy.util.pkl5`` across ranks, over shared memory and TCP.

``programs/pkl5_suite.py`` checks point to point, every collective at every root, the
intercommunicator collectives and concurrent senders (its docstring lists the steps) and prints
``pkl5 ok RANK CHECKS``; ``programs/pkl5_big.py`` sends one array beyond 2 GiB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(600)


def expected_checks(size: int) -> int:
    """How many objects each rank checks in pkl5_suite.py at ``size`` ranks."""
    p2p = 4 + (size > 1)  # four ring passes, then the synchronous one between neighbours
    collectives = 5 * size  # bcast/scatter/allgather/alltoall per root or peer, gather as root
    threads = 10
    return p2p + collectives + threads


def inter_checks(size: int, rank: int) -> int:
    """The intercommunicator step's checks of ``rank`` (even and odd ranks form the groups)."""
    if size == 1:
        return 0
    mine = len(range(rank % 2, size, 2))
    other = size - mine
    as_receiver = 2 * other  # bcast and scatter from each root of the other group
    as_root = other  # each rank is a root once and gathers from the other group
    return as_receiver + as_root + 2 * other  # + allgather and alltoall


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_pkl5_suite(ompy, size, btl):
    args = ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, "--timeout", "200"]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "pkl5_suite.py")], timeout=240)
    assert result.returncode == 0, result.stderr
    reports = sorted(tuple(map(int, line.split()[2:])) for line in result.stdout.splitlines())
    assert reports == [
        (rank, expected_checks(size) + inter_checks(size, rank)) for rank in range(size)
    ], result.stdout


def available_memory() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


@pytest.mark.skipif(available_memory() < 8 << 30, reason="needs 8 GiB of free memory")
def test_object_beyond_two_gib(ompy):
    args = ["-n", "2", "--mca", "btl", "self,sm", "--timeout", "500"]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "pkl5_big.py")], timeout=560)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "big ok\n"
