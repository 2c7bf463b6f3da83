"""A mixed-architecture job on one machine: rank 1 presents big-endian data.

``programs/hetero_suite.py`` runs on three ranks with
``--mca opal_arch_byteorder big --mca opal_arch_byteorder_ranks 1``, over shared memory and
over tcp: every predefined datatype and several derived ones (a vector, a struct with a hole,
a subarray, a strided array) go point to point between every pair of ranks and through
collectives and reductions, and arrive with their values; the raw bytes rank 1 sends are
big-endian; pickled objects are not converted.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "hetero_suite.py"
pytestmark = pytest.mark.timeout(300)

BIG_ENDIAN_RANK_1 = [
    "--mca",
    "opal_arch_byteorder",
    "big",
    "--mca",
    "opal_arch_byteorder_ranks",
    "1",
]


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
def test_a_big_endian_rank_exchanges_every_type(ompy, btl):
    args = ["-n", "3", "--oversubscribe", "--mca", "btl", btl, "--mca", "btl_tcp_if_include", "lo"]
    args += [*BIG_ENDIAN_RANK_1, sys.executable, str(PROGRAM)]
    result = ompy.run(args, timeout=280)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            reports[report["rank"]] = set(report["passed"])
    assert sorted(reports) == [0, 1, 2], result.stdout
    for rank, passed in reports.items():
        for name in (
            "p2p DOUBLE x20000",
            "p2p LONG_DOUBLE x3",
            "p2p C_DOUBLE_COMPLEX x20000",
            "p2p INT64_T x3",
            "p2p WCHAR x3",
            "objects",
            "vector x5000",
            "struct x5000",
            "subarray x5000",
            "strided column",
            "partial receive",
            "collectives DOUBLE",
            "collectives UINT16_T",
            "allreduce INT",
            "allreduce vector",
            "iscan",
            "exscan",
            "reduce_scatter",
            "scatter struct",
            "maxloc",
            "allreduce in place",
            "reduce_scatter_block in place",
            "scatterv",
            "alltoallv",
            "allgather in place",
            "ibcast",
        ):
            assert name in passed, (rank, name)
    assert "wire doubles are big-endian" in reports[0] and "wire ints are big-endian" in reports[0]
    assert "gather struct" in reports[0] and "gatherv" in reports[1]
