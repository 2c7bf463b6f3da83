"""Persistent collectives (MPI-4) through ``ompy run``, as an mpi4py program uses them.

One job per size (1 to 5 ranks: odd sizes and non-powers of two included) and transport
(shared memory, tcp) runs ``programs/persistent_suite.py``: every ``X_init`` on COMM_WORLD
(rooted ones at the first and the last rank) and on a Split communicator, each started many
times with new data and checked against a numpy reference after every start; requests started
in a different order on each rank among ordinary and nonblocking collectives; 1 MiB messages
(the rendezvous protocols); 1,000 starts; the errors MPI's rules call for; every
``Neighbor_*_init`` on every kind of topology, and a 2-D halo exchange with
``Neighbor_alltoallw_init``.  The same suite runs in a heterogeneous job (a big-endian rank).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "persistent_suite.py"
pytestmark = pytest.mark.timeout(300)

TRANSPORTS = {
    "sm": ["--mca", "btl", "self,sm"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
OPERATIONS = (
    "allreduce",
    "allreduce in place max",
    "reduce",
    "bcast",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv in place",
    "alltoall",
    "alltoall in place",
    "alltoallv",
    "alltoallw",
    "reduce_scatter_block",
    "reduce_scatter",
    "scan",
    "exscan",
    "barrier",
)


#: Rank 1 presents big-endian data: every buffer goes through stand-ins refilled per start, and
#: the reductions through a persistent allgather of the contributions.
BIG_ENDIAN_RANK_1 = [
    "--mca",
    "opal_arch_byteorder",
    "big",
    "--mca",
    "opal_arch_byteorder_ranks",
    "1",
]


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_every_persistent_collective_in_one_job(ompy, size, transport):
    check_suite(ompy, size, TRANSPORTS[transport])


def test_every_persistent_collective_in_a_heterogeneous_job(ompy):
    check_suite(ompy, 3, [*TRANSPORTS["sm"], *BIG_ENDIAN_RANK_1])


def check_suite(ompy, size, mca):
    args = ["-n", str(size), "--oversubscribe", *mca]
    result = ompy.run([*args, sys.executable, str(PROGRAM), "6"], timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(size)), result.stdout
    for report in reports:
        assert report["size"] == size
        passed = set(report["passed"])
        for label in ("world", "world root last", "split"):
            for operation in OPERATIONS:
                assert f"{label} {operation}" in passed, (report["rank"], label, operation)
        for check in ("any start order", "rendezvous allreduce", "1000 starts", "errors"):
            assert check in passed, (report["rank"], check)
        assert "neighbor halo Neighbor_alltoallw_init" in passed, report["rank"]
        for topology in ("cart 1-d periodic", "cart 1-d open", "graph ring", "dist graph"):
            for operation in ("allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"):
                assert f"neighbor {topology} {operation}" in passed, (report["rank"], topology)
