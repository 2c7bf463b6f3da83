"""Collectives through ``ompy run`` with the real PML, as a user runs an mpi4py program.

One job per size (1, 2, 5 and 9 ranks: odd sizes and non-powers of two) runs the whole battery
of ``programs/coll_suite.py``: every collective against a numpy reference on COMM_WORLD and on
communicators made by Dup, Split and Create, nonblocking collectives overlapped with
point-to-point traffic, and messages large enough for the rendezvous protocols.  The default
coll selection is used, and ``--mca coll basic`` proves that basic alone serves everything.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

CASES = [(1, ()), (2, ("--mca", "coll", "basic")), (5, ()), (9, ("--mca", "coll", "basic"))]


def reports(stdout: str) -> dict[int, dict]:
    found = {}
    for line in stdout.splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            found[report["rank"]] = report
    return found


@pytest.mark.parametrize(
    ("size", "args"), CASES, ids=[f"n{n}-{' '.join(a) or 'default'}" for n, a in CASES]
)
def test_every_collective_in_one_job(size, args, ompy):
    result = ompy.run(
        [
            "-n",
            str(size),
            "--oversubscribe",
            *args,
            sys.executable,
            str(PROGRAMS / "coll_suite.py"),
        ],
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    found = reports(result.stdout)
    assert sorted(found) == list(range(size)), result.stdout + result.stderr
    for report in found.values():
        assert report["size"] == size
        if args:
            assert set(report["providers"].values()) == {"basic"}, report
        else:
            assert all(report["providers"].values()), report


def test_a_collective_without_any_component_fails_clearly(ompy, tmp_path):
    """With every installed coll component excluded, p2p still works and collectives say why."""
    program = tmp_path / "no_coll.py"
    program.write_text(
        "from ompy import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "comm.send(1, dest=0)\n"
        "assert comm.recv(source=0) == 1\n"
        "try:\n"
        "    comm.Barrier()\n"
        "except MPI.Exception as error:\n"
        "    assert error.Get_error_class() == MPI.ERR_UNSUPPORTED_OPERATION\n"
        "    print(error)\n"
    )
    every = ",".join(sorted({entry.name for entry in entry_points(group="ompy.mca.coll")}))
    args = ["-n", "1", "--mca", "coll", f"^{every}", sys.executable, str(program)]
    result = ompy.run(args, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "no coll component implements barrier" in result.stdout
    assert "install ompy-coll-basic" in result.stdout


def test_finalize_closes_the_coll_then_the_op_framework(ompy, tmp_path):
    """At Finalize the modules of a communicator never freed go, then coll's and op's components."""
    program = tmp_path / "finalize.py"
    program.write_text(
        "import numpy as np\n"
        "from ompy import MPI\n"
        "comm = MPI.COMM_WORLD\n"
        "kept = comm.Dup()  # never freed\n"
        "total = np.zeros(1)\n"
        "kept.Allreduce(np.ones(1), total)\n"
        "assert total[0] == comm.Get_size()\n"
    )
    args = ["-n", "2", "--mca", "coll_base_verbose", "10", "--mca", "op_base_verbose", "10"]
    result = ompy.run([*args, sys.executable, str(program)], timeout=120)
    assert result.returncode == 0, result.stderr
    for pid in {line.split("]")[0] for line in result.stderr.splitlines() if line.startswith("[")}:
        lines = [line for line in result.stderr.splitlines() if line.startswith(pid + "]")]
        said = [line.split(": ", 1)[-1] for line in lines]
        if not any("closing the" in line for line in said):
            continue  # the launcher's own lines
        teardown = next(i for i, line in enumerate(said) if "tearing down the modules" in line)
        coll = said.index("closing the coll components")
        op = said.index("closing the op components")
        assert teardown < coll < op, lines
    closing = result.stderr.count("closing the coll components")
    assert closing == 2, result.stderr
    assert result.stderr.count("closing the op components") == 2, result.stderr
