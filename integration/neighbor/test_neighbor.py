"""Neighbor collectives through ``ompy run``: every topology kind, 1 to 5 ranks, sm and tcp.

One job per (size, transport) runs ``programs/neighbor_suite.py``: the neighbor battery of the
coll-basic tests (every neighbor collective, blocking, nonblocking, vector, general and object
forms, on Cartesian grids with periodic and open dimensions and extent-1 dimensions, a graph
with duplicate edges and self-loops, and distributed graphs, checked against MPI's matching
rules) and the 2-D periodic halo exchange of issue 15, where ``Neighbor_alltoallw`` must give
the same field as ``Sendrecv``, with small faces and with faces large enough for rendezvous;
once more with a rank that presents big-endian data.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "neighbor_suite.py"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SM = ("--mca", "btl", "self,sm")
TCP = ("--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo")
#: Rank 1 presents big-endian data: every typed block is converted on the way (staging).
MIXED = ("--mca", "opal_arch_byteorder", "big", "--mca", "opal_arch_byteorder_ranks", "1")
CASES = [(1, SM), (2, TCP), (3, SM), (4, TCP), (5, SM), (5, TCP), (3, SM + MIXED)]
NAMES = [
    f"n{n}-{'tcp' if 'self,tcp' in m else 'sm'}{'-mixed-arch' if 'big' in m else ''}"
    for n, m in CASES
]


def _kinds(passed: list[str]) -> set[str]:
    return {name.split(" ")[0] for name in passed}


@pytest.mark.parametrize(("size", "mca"), CASES, ids=NAMES)
def test_every_neighbor_collective_on_every_topology(ompy, size, mca):
    args = ["-n", str(size), "--oversubscribe", *mca, sys.executable, str(PROGRAM)]
    result = ompy.run(args, timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(size)), result.stdout
    for report in reports:
        passed = set(report["passed"])
        assert {"cart", "graph", "dist", "halo"} <= _kinds(report["passed"]), report
        for topology in ("cart 1-d periodic", "cart 1xNx1 periodic", "graph ring", "dist graph"):
            for check in ("allgather", "alltoall", "allgatherv", "alltoallv", "alltoallw"):
                assert f"{topology} {check}" in passed, (report["rank"], topology, check)
            for check in ("dup", "in flight", "objects", "errors"):
                assert f"{topology} {check}" in passed, (report["rank"], topology, check)
        assert set(report["providers"].values()) == {"basic"}, report
