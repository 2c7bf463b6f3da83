"""MPI.pickle through ompy run: the codec configured by the program serializes every lowercase
call, point-to-point (the real PML's sized receives) and collective (the coll framework's
object operations), over shared memory and tcp."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(240)

EXPECTED = {
    "custom:protocol",
    "custom:sendrecv",
    "custom:sendrecv_call",
    "custom:bcast",
    "custom:allreduce",
    "custom:gather",
    "custom:used",
    "default:protocol",
    "default:array",
    "default:writable",
    "default:bcast_array",
    "default:allreduce_array",
    "inband:bcast_array",
}


@pytest.mark.slow
@pytest.mark.parametrize(("btl", "size"), [("self,sm", 3), ("self,tcp", 2)])
def test_a_custom_codec_serializes_every_lowercase_call(btl, size, ompy):
    program = [sys.executable, str(PROGRAMS / "codec_suite.py")]
    result = ompy.run(
        ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, *program], timeout=200
    )
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(size)), result.stdout
    for report in reports:
        assert set(report["checks"]) == EXPECTED, report
