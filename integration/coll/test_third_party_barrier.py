"""A third-party coll component that implements barrier alone, on COMM_WORLD alone.

The Open MPI case study this follows (a hardware barrier added as a coll component "without
any changes in Open MPI itself"): the distribution in integration/third_party/coll-barrier-only
is pip-installed for this test only; a job then selects it for COMM_WORLD's barrier (its
priority beats basic's), every other collective and every other communicator's barrier still
work through basic, ``coll_base_verbose`` shows the table, ``--mca coll ^barrieronly`` and a
negative priority take it out, and after ``pip uninstall`` no trace of it is left.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]

TEMPLATE = Path(__file__).parents[1] / "third_party" / "coll-barrier-only"
PROGRAM = Path(__file__).parent / "programs" / "barrier_only.py"
DISTRIBUTION = "ompy-coll-barrieronly"
VERBOSE = ("--mca", "coll_base_verbose", "10")
#: Above whatever other coll components are installed (tuned, sm, ...), for its barrier.
FIRST = ("--mca", "coll_barrieronly_priority", "1000")


def pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"pip {args} failed:\n{done.stdout}\n{done.stderr}"


def installed() -> bool:
    try:
        importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def reports(stdout: str) -> dict[int, dict]:
    return {r["rank"]: r for r in map(json.loads, filter(None, stdout.splitlines()))}


def test_barrier_only_component_serves_world_barrier_and_nothing_else(ompy, tmp_path):
    assert not installed(), f"{DISTRIBUTION} is installed already; uninstall it first"
    source = tmp_path / "coll-barrier-only"
    shutil.copytree(TEMPLATE, source)
    env = {"OMPY_MCA_PARAM_FILES": ""}
    try:
        pip("install", "--no-build-isolation", "--no-deps", "--quiet", str(source))
        result = ompy.run(
            ["-n", "3", "--oversubscribe", *VERBOSE, *FIRST, sys.executable, str(PROGRAM)],
            env=env,
            timeout=240,
        )
        assert result.returncode == 0, result.stderr
        found = reports(result.stdout)
        assert sorted(found) == [0, 1, 2], result.stdout
        for rank, report in found.items():
            # Barrier on COMM_WORLD is the component's; everything else comes from the others.
            assert report["world"]["barrier"] == "barrieronly", report
            assert report["world"]["ibarrier"] not in (None, "barrieronly"), report
            assert report["world"]["allreduce"] not in (None, "barrieronly"), report
            assert report["dup"] not in (None, "barrieronly"), report
            assert report["barriers"] == 2  # COMM_WORLD's two; the duplicate's went elsewhere
            if rank != 0:
                assert report["waited"] > 1.0, report  # nobody left before rank 0 arrived
        # The verbose table of each rank's COMM_WORLD names the component for barrier alone.
        world_lines = [line for line in result.stderr.splitlines() if "(context id 0)" in line]
        assert len(world_lines) == 3, result.stderr
        assert all("barrieronly: barrier;" in line for line in world_lines), world_lines
        other_lines = [line for line in result.stderr.splitlines() if "coll: communicator" in line]
        assert all("barrieronly" not in line for line in other_lines if line not in world_lines)

        # The user leaves it out, by name or by a negative priority: another component serves it.
        for args in (
            ["--mca", "coll", "^barrieronly"],
            ["--mca", "coll_barrieronly_priority", "-1"],
        ):
            result = ompy.run(
                ["-n", "2", *args, sys.executable, str(PROGRAM)], env=env, timeout=240
            )
            assert result.returncode == 0, result.stderr
            for report in reports(result.stdout).values():
                assert report["world"]["barrier"] not in (None, "barrieronly"), report
                assert report["barriers"] == 0
    finally:
        if installed():
            pip("uninstall", "--yes", "--quiet", DISTRIBUTION)
    assert not installed()
    listing = subprocess.run(
        [str(Path(sys.executable).with_name("ompy")), "info", "--parsable"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={k: v for k, v in os.environ.items() if not k.startswith("OMPY_MCA_")},
    )
    assert "mca:coll:barrieronly:" not in listing.stdout
    assert "mca:coll:basic:version" in listing.stdout
