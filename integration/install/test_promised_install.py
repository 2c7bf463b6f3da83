"""The install the README promises: ``pip install ompy-ompi ompy-btl-tcp`` gives a working MPI.

Every distribution of the tree is built into a local wheelhouse; a fresh virtual environment then
gets exactly the two distributions a user would name, from that wheelhouse (third-party
dependencies such as numpy from the package index, as for a user).  Each layer pulls in its
baseline components, so the launcher has a plm, the ranks an ess and a PML, and MPI its
collectives; the optional tcp transport is there because the user named it.  A 2-rank job then
runs over tcp, and ``ompy info`` lists what came with the layers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
#: What a user types after ``pip install``.
REQUESTED = ("ompy-ompi", "ompy-btl-tcp")
#: Every component the layers must bring along without being named.
BASELINE = {
    "shmem": {"posix", "mmap"},
    "ess": {"env", "singleton"},
    "ras": {"hostfile"},
    "plm": {"local"},
    "iof": {"default"},
    "errmgr": {"default"},
    "pml": {"ob1"},
    "bml": {"r2"},
    "btl": {"self", "sm", "tcp"},
    "coll": {"basic", "tuned", "sm", "inter"},
    "op": {"ufunc"},
    "topo": {"basic"},
    "osc": {"pt2pt", "sm"},
}

PROGRAM = """
import json
import numpy as np
from ompy import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
data = np.arange(4, dtype="i8") if rank == 0 else np.zeros(4, dtype="i8")
if rank == 0:
    comm.Send(data, dest=1, tag=7)
else:
    comm.Recv(data, source=0, tag=7)
total = comm.allreduce(int(data.sum()), op=MPI.SUM)
print(json.dumps({"rank": rank, "size": comm.Get_size(), "total": total}), flush=True)
"""


def distributions() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "packages").glob("**/pyproject.toml"))


def run(args: list[str], *, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh environment holding exactly what ``pip install ompy-ompi ompy-btl-tcp`` brings."""
    work = tmp_path_factory.mktemp("install")
    wheelhouse = work / "wheelhouse"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPY_", "PIP_"))}
    run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(wheelhouse), *map(str, distributions())],
        env=env,
        timeout=300,
    )  # fmt: skip
    target = work / "venv"
    run([sys.executable, "-m", "venv", str(target)], env=env, timeout=120)
    run(
        [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", "--find-links", str(wheelhouse), *REQUESTED],
        env=env,
        timeout=600,
    )  # fmt: skip
    return target


def installed_ompy(venv: Path) -> set[str]:
    listing = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {d["name"] for d in json.loads(listing.stdout) if d["name"].startswith("ompy-")}


def test_the_layers_bring_their_baseline_components_and_nothing_unasked(venv):
    names = {
        tomllib.loads((path / "pyproject.toml").read_text())["project"]["name"]
        for path in distributions()
    }
    baseline = {f"ompy-{fw}-{name}" for fw, found in BASELINE.items() for name in found}
    expected = {"ompy-opal", "ompy-orte", "ompy-ompi"} | baseline
    assert expected <= names, "the test names a distribution the tree does not have"
    assert installed_ompy(venv) == expected


def test_info_lists_every_baseline_component(venv):
    done = run([str(venv / "bin" / "ompy"), "info", "--parsable"], env=dict(os.environ), timeout=60)
    seen: dict[str, set[str]] = {}
    for line in done.stdout.splitlines():
        fields = line.split(":")
        if fields[0] == "mca" and len(fields) >= 3:
            seen.setdefault(fields[1], set()).add(fields[2])
    for framework, components in BASELINE.items():
        assert components <= seen.get(framework, set()), (framework, done.stdout)


def test_a_two_rank_job_runs_over_tcp(venv, ompy, tmp_path):
    program = tmp_path / "app.py"
    program.write_text(PROGRAM)
    env = {k: v for k, v in ompy.env().items() if not k.startswith("OMPY_MCA_")}
    done = run(
        [str(venv / "bin" / "ompy"), "run", "-n", "2", "--mca", "btl", "self,tcp",
         str(venv / "bin" / "python"), str(program)],
        env=env,
        timeout=120,
    )  # fmt: skip
    results = sorted(
        (json.loads(line) for line in done.stdout.splitlines()), key=lambda r: r["rank"]
    )
    assert [result["rank"] for result in results] == [0, 1]
    assert all(result["size"] == 2 and result["total"] == 12 for result in results)
