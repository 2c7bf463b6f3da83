"""Intercommunicators through ``ompy run`` with the real PML, as a user runs an mpi4py program.

One job per size (2 to 5 ranks, so odd sizes give groups of unequal sizes) and transport (shared
memory, TCP) runs ``programs/intercomm_suite.py``: the coll-inter battery (intercommunicators of
three shapes, point-to-point across the groups, every collective blocking and nonblocking, vector
and object forms, roots on either side, all checked against values each rank computes itself;
Dup, Split, Create, Merge, names, attributes; every persistent collective started three times
with new data, in a different order on every rank) and rendezvous-sized messages across the groups.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "intercomm_suite.py"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

TRANSPORTS = {
    "sm": ["--mca", "btl", "self,sm"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
CASES = [(size, transport) for transport in sorted(TRANSPORTS) for size in (2, 3, 4, 5)]


@pytest.mark.parametrize(("size", "transport"), CASES, ids=[f"n{n}-{t}" for n, t in CASES])
def test_the_intercommunicator_suite_passes(ompy, size, transport):
    args = [
        "-n",
        str(size),
        "--oversubscribe",
        *TRANSPORTS[transport],
        sys.executable,
        str(PROGRAM),
    ]
    result = ompy.run(args, timeout=380)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(size)), result.stdout
    for report in reports:
        passed = set(report["passed"])
        assert len(passed) > 100, report
        for expected in (
            "halves: send/recv from every remote rank",
            "halves: nonblocking root in high group at 0: Bcast",
            "odd-even: blocking: Reduce_scatter",
            "one-vs-rest: nonblocking in flight together",
            "halves: Merge high=False",
            "halves: persistent root in high group start 2: Allgatherv_init",
            "odd-even: persistent root in low group start 2: Reduce_scatter_init",
            "one-vs-rest: persistent Barrier_init started 21 times",
            "rendezvous across",
        ):
            assert any(name.startswith(expected) for name in passed), (report["rank"], expected)
        assert set(report["providers"].values()) == {"inter"}, report


HETERO_PROGRAM = Path(__file__).parent / "programs" / "hetero_inter.py"


def test_a_heterogeneous_job_refuses_reductions_between_groups_and_moves_the_rest(ompy):
    args = [
        "-n",
        "3",
        "--oversubscribe",
        *TRANSPORTS["sm"],
        "--mca",
        "opal_arch_byteorder",
        "big",
        "--mca",
        "opal_arch_byteorder_ranks",
        "1",
        sys.executable,
        str(HETERO_PROGRAM),
    ]
    result = ompy.run(args, timeout=200)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == [0, 1, 2], result.stdout
    for report in reports:
        assert all(value is True for value in report["outcome"].values()), report
        assert len(report["outcome"]) == 6, report
