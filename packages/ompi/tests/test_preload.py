"""The MPI layer's preload entry: what the fork server imports before it forks the ranks."""

from __future__ import annotations

import json
import subprocess
import sys

from ompy.ompi import preload
from ompy.opal.mca import discovery


def test_every_loaded_component_prepares_and_one_that_fails_stops_nobody(monkeypatch):
    prepared: list[str] = []

    class Broken:
        @classmethod
        def preload(cls) -> None:
            raise OSError("this kernel has no such system call")

    class Ready:
        @classmethod
        def preload(cls) -> None:
            prepared.append("ready")

    monkeypatch.setattr(discovery, "list_candidates", lambda group: (["candidate"], []))
    monkeypatch.setattr(discovery, "load_components", lambda fw, found: ([Broken, Ready], []))
    preload._import_components()

    assert prepared == ["ready"] * len(preload.rank_frameworks())


def test_the_preloaded_frameworks_are_installed_rank_frameworks():
    installed = {fw.name: fw for fw in discovery.installed_frameworks(failures=[])}
    for framework in preload.rank_frameworks():
        assert installed[framework.name] is framework
        assert framework.layer in ("opal", "ompi")


def modules_after(code: str) -> set[str]:
    """The ``ompy`` modules a fresh interpreter holds after running ``code``."""
    shown = f"{code}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", shown], capture_output=True, text=True, timeout=120, check=True
    )
    return {name for name in json.loads(result.stdout.splitlines()[-1]) if name.startswith("ompy")}


def test_what_a_rank_imports_to_start_meet_and_reduce_is_all_preloaded():
    """The fork server's preload is what every forked rank starts with: a module a rank needs
    for initialization, a barrier and a reduction but that is missing from it is imported by
    every rank after its fork, on every job's critical path."""
    preloaded = modules_after(
        "from ompy.orte.launcher.preload import run_preloads\nassert not run_preloads()"
    )
    rank = modules_after(
        "from ompy import MPI\n"
        "MPI.COMM_WORLD.Barrier()\n"
        "assert MPI.COMM_WORLD.allreduce(1) == 1\n"
        "import numpy\n"
        "buf = numpy.ones(1)\n"
        "MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, buf)\n"
    )
    assert "ompy.MPI" not in preloaded  # importing it initializes MPI: each rank does that
    missing = rank - preloaded - {"ompy.MPI"}
    assert not missing, f"imported by a rank but not preloaded: {sorted(missing)}"


def test_frameworks_opened_on_first_use_are_not_preloaded():
    """Windows and reordered topologies are for the programs that ask for them."""
    preloaded = modules_after(
        "from ompy.orte.launcher.preload import run_preloads\nassert not run_preloads()"
    )
    assert not [m for m in preloaded if m.startswith(("ompy.mca.osc.", "ompy.mca.topo."))]
