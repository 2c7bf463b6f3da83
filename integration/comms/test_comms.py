"""Communicator creation and the rest of point-to-point through ``ompy run`` (issue 15).

One job per (size, transport) runs ``programs/comms_suite.py``: send-receive in every buffer
form (blocking and nonblocking, replace or not, rendezvous sizes), Idup/Idup_with_info/
Dup_with_info with the agreement progressing while the caller does other work, Split_type with
every split type (ranks bound to processors for the hardware splits), Create_group tags and
partitioned point-to-point; at 1 to 5 ranks over shared memory and over tcp.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "comms_suite.py"
pytestmark = pytest.mark.timeout(300)

TRANSPORTS = {
    "sm": ["--mca", "btl", "self,sm"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
#: Checks every rank must report, whatever the size.
EXPECTED = (
    "Sendrecv [buf, count, displ, type]",
    "Isendrecv [buf, 1, vector]",
    "Isendrecv_replace strided",
    "Sendrecv_replace [buf, (count, displ), type]",
    "isendrecv rendezvous",
    "isendrecv_replace rendezvous",
    "isendrecv proc_null",
    "isendrecv bad rank",
    "idup",
    "idup allreduce",
    "idup buffer allreduce",
    "idup_with_info hints",
    "dup_with_info hints",
    "idup of idup",
    "split_type shared",
    "split_type hw_guided shared memory",
    "split_type resource_guided shared memory",
    "split_type hw_guided no key",
    "split_type hw_guided pu",
    "split_type pset self",
    "split_type mismatch",
    "create_group bad tag",
    "partitioned 4->2 x8 round 2",
    "partitioned 2->4 x8 round 1",
    "partitioned 8->8 x40000 round 2",
    "parrived early",
    "partitioned pready_list",
    "pready inactive",
    "pready bad partition",
    "partitioned mismatch",
    "precv wildcard refused",
)


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("ranks", [1, 2, 3, 4, 5])
def test_the_comms_suite_passes(ompy, ranks, transport):
    args = ["-n", str(ranks), "--oversubscribe", *TRANSPORTS[transport]]
    result = ompy.run([*args, sys.executable, str(PROGRAM)], timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(ranks)), result.stdout
    for report in reports:
        passed = set(report["passed"])
        missing = [name for name in EXPECTED if name not in passed]
        assert not missing, (report["rank"], missing)
        if ranks > 1 and report["rank"] == 0:
            assert "idup pending" in passed
        if report["rank"] % 2 == 0:
            assert {"create_group tags", "create_group works"} <= passed


THREADS_PROGRAM = Path(__file__).parent / "programs" / "threads_suite.py"


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("ranks", [2, 3])
def test_idup_and_partitioned_requests_from_several_threads(ompy, ranks, transport):
    args = ["-n", str(ranks), "--oversubscribe", *TRANSPORTS[transport]]
    result = ompy.run([*args, sys.executable, str(THREADS_PROGRAM)], timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(ranks)), result.stdout
    for report in reports:
        left = (report["rank"] - 1) % ranks
        for index in range(3):
            size, received, steady = report["results"][str(index)]
            assert size == ranks and steady
            assert received == [left + 10 * index] * 6
