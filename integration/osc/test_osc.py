"""One-sided communication across processes, through ``ompy run``.

One job per (size, transport) runs ``programs/osc_suite.py``: seeded random RMA programs
checked against a sequential model in every sync mode, concurrent atomic counters that must
not lose an increment, and a target serving passive-target RMA from inside a blocking
receive.  Sizes 1 to 4, over shared memory and over TCP.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAM = Path(__file__).parent / "programs" / "osc_suite.py"
pytestmark = pytest.mark.timeout(400)

TRANSPORTS = {
    "sm": ["--mca", "btl", "self,sm"],
    "tcp": ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"],
}
EXPECTED = [
    "model fence",
    "model pscw",
    "model lock",
    "model lock_all",
    "counter lock",
    "counter lock_all",
    "counter cas",
    "served inside a receive",
]


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_the_osc_suite_passes(ompy, transport, ranks):
    args = ["-n", str(ranks), "--oversubscribe", *TRANSPORTS[transport]]
    result = ompy.run([*args, sys.executable, str(PROGRAM)], timeout=380)
    assert result.returncode == 0, result.stderr[-4000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert sorted(report["rank"] for report in reports) == list(range(ranks)), result.stdout
    for report in reports:
        assert report["passed"] == EXPECTED, report
