"""coll/tuned through ``ompy run`` with the real PML: every algorithm, and the parameters.

One job per size runs the whole battery (every algorithm forced one by one, on COMM_WORLD and
on its halves, blocking and nonblocking); a few more jobs prove that the
``coll_tuned_<op>_algorithm`` parameters reach the ranks, that a forced algorithm which cannot
run a call gives way with a note, and that a bad value is reported.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = pytest.mark.timeout(180)


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


@pytest.mark.parametrize("size", [3, 8])
def test_every_algorithm_in_real_processes(size, ompy):
    """A 3-rank (odd) and an 8-rank (power of two) job, halves of 2 and 1 / 4 and 4 ranks."""
    result = ompy.run(
        ["-n", str(size), "--oversubscribe", sys.executable, str(PROGRAMS / "tuned_suite.py")],
        timeout=150,
    )
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(size)), result.stdout
    passed = found[0]["passed"]
    assert all(report["passed"] == passed for report in found.values())
    assert {"allreduce:rabenseifner", "split:alltoall:bruck", "iallreduce:ring"} <= set(passed)
    assert "api:300001" in passed


def test_parameters_force_algorithms_and_unfit_ones_give_way(ompy):
    args = ["-n", "3", "--oversubscribe", "--mca", "coll", "tuned,basic"]
    for name, value in [
        ("coll_tuned_allreduce_algorithm", "rabenseifner"),
        ("coll_tuned_bcast_algorithm", "pipeline"),
        ("coll_tuned_allgather_algorithm", "recursive_doubling"),
        ("coll_tuned_barrier_algorithm", "recursive_doubling"),
        ("coll_tuned_verbose", "20"),
    ]:
        args += ["--mca", name, value]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "tuned_params.py")], timeout=60)
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == [0, 1, 2]
    assert all(set(report["by"].values()) == {"tuned"} for report in found.values())
    err = result.stderr
    assert err.count("allreduce of 400000 bytes on 3 ranks: rabenseifner") == 3  # SUM
    assert err.count("bcast of 400000 bytes on 3 ranks: pipeline") == 3
    assert err.count("barrier of 0 bytes on 3 ranks: recursive_doubling") == 3
    # The non-commutative Allreduce and the allgather on 3 ranks cannot use what was forced.
    assert (
        err.count(
            "coll_tuned_allreduce_algorithm=rabenseifner cannot run here (it needs a commutative "
            "operation); using recursive_doubling"
        )
        == 3
    )
    assert (
        err.count(
            "coll_tuned_allgather_algorithm=recursive_doubling cannot run here (it needs a "
            "power-of-two number of ranks, not 3); using bruck"
        )
        == 3
    )


def test_without_verbose_forcing_is_silent(ompy):
    result = ompy.run(
        [
            "-n",
            "2",
            "--mca",
            "coll",
            "tuned,basic",
            "--mca",
            "coll_tuned_allreduce_algorithm",
            "ring",
            sys.executable,
            str(PROGRAMS / "tuned_params.py"),
        ],
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "coll tuned" not in result.stderr


def test_a_bad_algorithm_name_is_reported(ompy):
    result = ompy.run(
        [
            "-n",
            "2",
            "--mca",
            "coll_tuned_allreduce_algorithm",
            "fastest",
            sys.executable,
            str(PROGRAMS / "tuned_params.py"),
        ],
        timeout=60,
    )
    assert result.returncode != 0  # a bad value is the user's to fix, not silently skipped
    assert (
        "MCA parameter 'coll_tuned_allreduce_algorithm' has the invalid value 'fastest' "
        "(from command line (--mca coll_tuned_allreduce_algorithm))" in result.stderr
    )
    assert "expected one of auto, recursive_doubling, ring, rabenseifner, reduce_bcast" in (
        result.stderr
    )


@pytest.mark.parametrize(
    "forced",
    [
        {"gatherv": "binomial", "scatterv": "binomial", "alltoallw": "pairwise"},
        {"gatherv": "linear_sync", "scatterv": "linear", "alltoallw": "linear"},
    ],
    ids=["trees-pairwise", "linear"],
)
def test_gatherv_scatterv_and_alltoallw_algorithms_are_forced_by_parameters(forced, ompy):
    args = ["-n", "5", "--oversubscribe", "--mca", "coll_tuned_verbose", "20"]
    for operation, name in forced.items():
        args += ["--mca", f"coll_tuned_{operation}_algorithm", name]
    result = ompy.run([*args, sys.executable, str(PROGRAMS / "vector_params.py")], timeout=90)
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(5))
    assert all(set(report["by"].values()) == {"tuned"} for report in found.values())
    for operation, name in forced.items():
        calls = 5 if operation != "alltoallw" else 1  # one call per root, or one call
        assert result.stderr.count(f"{operation} of 0 bytes on 5 ranks: {name}") == 5 * calls
