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


#: (ranks, btl, osc): every size over both transports with the default window component (sm
#: on one node), and the message-served windows of pt2pt, whose targets apply operations only
#: in progress passes, which a spinning lock must give.
RUNS = [
    *((size, btl, None) for btl in ("self,sm", "self,tcp") for size in (1, 2, 3, 4)),
    (2, "self,tcp", "pt2pt"),
    (3, "self,sm", "pt2pt"),
    (4, "self,tcp", "pt2pt"),
]


@pytest.mark.parametrize(("size", "btl", "osc"), RUNS)
def test_sync_suite(ompy, size, btl, osc):
    args = ["-n", str(size), "--oversubscribe", "--mca", "btl", btl, "--timeout", "200"]
    if osc is not None:
        args += ["--mca", "osc", osc]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "sync_suite.py")], timeout=240)
    assert result.returncode == 0, result.stderr
    outcomes = {
        entry["check"]: entry["ok"] for entry in map(json.loads, result.stdout.splitlines())
    }
    assert outcomes == dict.fromkeys(CHECKS, True), result.stdout
