"""The small-message fast path through ``ompy run``: its semantics are the general path's.

A blocking receive from one same-node peer polls that peer's sm ring and matches inline
(docs/point-to-point.md, "The small-message fast path").  Each job runs
``programs/fastpath_suite.py`` (its docstring lists the sections: the inline receive itself,
wildcards posted while fast-path messages arrive, probes before a fast-path receive,
interleaved small and large messages from one sender, truncation, cancellation, threads
sending concurrently, and a receive blocked for seconds).  Every rank reports the problems it
found, which must be none, and rank 0 the processor time its blocked receive used.  The same
suite runs over tcp, where no ring is polled, and over sm with ``pml_ob1_fast_path`` off, as
the reference for the semantics.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(300)
SM = ["--mca", "btl", "self,sm"]
TCP = ["--mca", "btl", "self,tcp"]


def reports(result, ranks: int) -> dict[int, dict]:
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    assert sorted(found) == list(range(ranks)), result.stdout + result.stderr
    return found


@pytest.mark.parametrize(
    ("ranks", "transport", "options"),
    [
        (2, SM, ["--inline", "--threads"]),
        (3, SM, ["--inline", "--threads"]),  # oversubscribed on 2 cores: idle polls yield
        (4, SM, ["--inline"]),
        (2, [*SM, "--mca", "pml_ob1_fast_path", "false"], ["--threads"]),
        (2, TCP, ["--threads"]),
        (3, TCP, []),
    ],
    ids=["sm-2", "sm-3-oversubscribed", "sm-4", "sm-2-fast-path-off", "tcp-2", "tcp-3"],
)
def test_fast_path_keeps_matching_order_probes_truncation_cancel_and_threads(
    ompy, ranks, transport, options
):
    program = [sys.executable, str(PROGRAMS / "fastpath_suite.py"), *options]
    result = ompy.run(["-n", str(ranks), "--oversubscribe", *transport, *program], timeout=240)
    found = reports(result, ranks)
    for rank, report in found.items():
        assert report["problems"] == [], (rank, report["problems"])
    checked = found[0]["checked"]
    expected = {"wildcard", "probe", "interleaved", "truncation", "cancel", "idle"}
    if "--inline" in options:
        expected.add("inline")
    if "--threads" in options:
        expected.add("threads")
    assert set(checked) == expected, checked
    # A receive blocked for 2 s sleeps, oversubscribed or not (spinning would use ~100%).
    assert found[0]["wall"] >= 1.9, found[0]
    assert found[0]["cpu"] < 0.05 * found[0]["wall"], found[0]
