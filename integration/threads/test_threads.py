"""MPI_THREAD_MULTIPLE through ``ompy run``: many threads per rank, over sm and over tcp.

Each job runs ``programs/threads_suite.py`` (its docstring lists the steps: thread levels,
threads sharing ``COMM_WORLD`` with ANY_SOURCE and specific sources, pickled and buffer
messages, long messages, per-thread ``Dup``/``Split`` made concurrently, nonblocking
exchanges finished by ``Waitall``, collectives on per-thread communicators).  Every rank
reports the problems it found, which must be none.  Before the lock was designed, two threads
corrupted ob1's matching state (a wrong sequence number, a delivery to a missing callback) or
hung.  A third job checks that blocked threads on an oversubscribed node do not spin.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(300)


def reports(result, ranks: int) -> dict[int, dict]:
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        report = json.loads(line)
        found[report["rank"]] = report
    assert sorted(found) == list(range(ranks)), result.stdout + result.stderr
    return found


@pytest.mark.parametrize(
    ("ranks", "transport", "options"),
    [
        (2, ["--mca", "btl", "self,sm"], []),
        (3, ["--mca", "btl", "self,sm"], []),  # oversubscribed on 2 cores: idle passes yield
        (2, ["--mca", "btl", "self,tcp"], []),
        # every thread exists before Init_thread, which must switch to the locked mode at once
        (2, ["--mca", "btl", "self,sm"], ["--threads-before-init"]),
    ],
    ids=["sm", "sm-oversubscribed", "tcp", "sm-threads-before-init"],
)
def test_threads_share_and_split_communicators_without_losing_a_message(
    ompy, ranks, transport, options
):
    result = ompy.run(
        [
            "-n",
            str(ranks),
            "--oversubscribe",
            *transport,
            sys.executable,
            str(PROGRAMS / "threads_suite.py"),
            *options,
        ],
        timeout=240,
    )
    for rank, report in reports(result, ranks).items():
        assert report["thread_level"] == 3, rank
        assert report["levels"] == [], (rank, report["levels"])
        assert report["shared"] == [], (rank, report["shared"])
        assert report["private"] == [], (rank, report["private"])


def test_blocked_threads_on_an_oversubscribed_node_do_not_spin(ompy):
    # 4 ranks on a 2-core machine; 2 threads of each of ranks 1..3 block for 3 s.
    result = ompy.run(
        ["-n", "4", "--oversubscribe", sys.executable, str(PROGRAMS / "idle_threads.py")],
        timeout=120,
    )
    for rank, report in reports(result, 4).items():
        assert report["wall"] >= 2.5, (rank, report)
        assert report["cpu"] < 0.25 * report["wall"], (rank, report)  # spinning would be ~1.0
        if rank:
            assert report["got"] == {"0": [rank, 0], "1": ["object", rank, 1]}
