"""Buffer kinds through ``ompy run``: the buffer protocol, DLPack and the CUDA array interface
(over host memory) are sent and received in every point-to-point form, contiguous and through
the convertor, over sm and tcp, and ompy lets go of every exporter once the call or request that
used it is done."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]

KINDS = ("buffer", "dlpack", "cai")
FORMS = ("blocking", "nonblocking", "synchronous", "sendrecv", "waitall", "persistent")
SIZES = (8, 300_000, 4 << 20)


def expected(rank: int) -> set[str]:
    """The checks rank ``rank`` must report: every kind, form and size released; data checked
    where this rank received."""
    names = {"device:refused"}
    for kind in KINDS:
        names.add(f"{kind}:nonblocking:null")
        if rank == 0 or kind != "dlpack":
            names.add(f"{kind}:persistent:kept")
        for form in FORMS:
            for size in SIZES:
                names.add(f"{kind}:{form}:{size}:released")
                if rank == 1 or form in ("sendrecv", "waitall"):
                    names.add(f"{kind}:{form}:{size}:data")
        for form in ("bcast", "ibcast", "allreduce", "allgather"):
            for size in SIZES:
                names.update({f"{kind}:{form}:{size}:data", f"{kind}:{form}:{size}:released"})
        for form in ("vector", "strided"):
            for size in SIZES:
                names.add(f"{kind}:{form}:{size}:released")
                if rank == 1:
                    names.update({f"{kind}:{form}:{size}:data", f"{kind}:{form}:{size}:gaps"})
    return names


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
def test_every_buffer_kind_is_moved_and_released(btl, ompy):
    program = [sys.executable, str(PROGRAMS / "kinds_suite.py")]
    result = ompy.run(["-n", "2", "--mca", "btl", btl, *program], timeout=200)
    assert result.returncode == 0, result.stderr
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(reports) == 1, result.stdout
    for rank, checks in enumerate(reports[0]["checks"]):
        assert set(checks) == expected(rank), (rank, set(checks) ^ expected(rank))
