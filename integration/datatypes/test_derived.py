"""Derived datatypes and strided arrays on every message path, through ``ompy run``.

One job per transport runs ``programs/derived_suite.py``: point-to-point in every form (eager,
rendezvous, synchronous, buffered, persistent, matched probes, send-receive-replace, to itself),
layouts on one side against contiguous buffers on the other (the RGET path reads into a
non-contiguous receive piece by piece), partial receives counted exactly, strided arrays,
collectives and reductions on derived types, and the errors bad datatypes raise.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "derived_suite.py"
pytestmark = pytest.mark.timeout(300)

#: (ranks, MCA arguments): btl/self alone, shared memory, tcp with and without RDMA gets.
TRANSPORTS = {
    "self": (1, ["--mca", "btl", "self"]),
    "sm": (3, ["--mca", "btl", "self,sm"]),
    "tcp": (3, ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"]),
    "tcp-frags": (
        2,
        [
            "--mca",
            "btl",
            "self,tcp",
            "--mca",
            "btl_tcp_if_include",
            "lo",
            "--mca",
            "pml_ob1_use_rdma",
            "false",
        ],
    ),
}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_the_derived_suite_passes(ompy, transport):
    ranks, mca = TRANSPORTS[transport]
    args = ["-n", str(ranks), "--oversubscribe", *mca, sys.executable, str(PROGRAM)]
    result = ompy.run(args, timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(ranks)), result.stdout
    for report in reports:
        passed = set(report["passed"])
        for expected in (
            "send/recv subarray x12000",
            "layout to contiguous indexed x12000",
            "contiguous to layout resized x12000",
            "self vector x300",
            "partial count",
            "partial element count",
            "bsend",
            "persistent 1",
            "mprobe/mrecv",
            "sendrecv_replace gaps",
            "strided column",
            "negative stride",
            "2-d strided receive",
            "struct data",
            "allreduce subarray x700",
            "reduce_scatter_block vector x700",
            "alltoallw",
            "alltoallw gaps",
            "allreduce strided",
            "mixed reduction refused",
            "minloc",
            "uncommitted refused",
            "overlapping receive refused",
        ):
            assert expected in passed, (report["rank"], expected)
