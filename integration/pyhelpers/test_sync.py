"""``ompy.util.sync`` across ranks, over shared memory and TCP.

``programs/sync_suite.py`` uses every object concurrently from every rank (its docstring lists
the checks): a counter never loses an increment, a shared record proves the mutex's exclusion,
condition waiters are woken one per ``notify(1)``, a semaphore never admits more than its slots.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(300)

CHECKS = [
    "counter",
    "mutex",
    "mutex_try",
    "condition",
    "condition_predicate",
    "semaphore",
    "sequential",
]


@pytest.mark.parametrize("btl", ["self,sm", "self,tcp"])
@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_sync_suite(ompy, size, btl):
    args = ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, "--timeout", "200"]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "sync_suite.py")], timeout=240)
    assert result.returncode == 0, result.stderr
    outcomes = {
        entry["check"]: entry["ok"] for entry in map(json.loads, result.stdout.splitlines())
    }
    assert outcomes == dict.fromkeys(CHECKS, True), result.stdout
