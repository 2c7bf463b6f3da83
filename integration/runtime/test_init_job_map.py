"""MPI initialization learns where every rank runs from the job map that ompy run hands out,
which saves a modex fence; without the map (another launcher) it asks the modex instead."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(120)

REPORT = """
import json, os, sys
if sys.argv[1] == "without-map":
    del os.environ["OMPY_NODE_NAMES"], os.environ["OMPY_RANK_NODES"]
from ompy import MPI
from ompy.orte import runtime
world = MPI.COMM_WORLD
fences = runtime.init().modex.generation
names = world.allgather(MPI.Get_processor_name())
shared = world.Split_type(MPI.COMM_TYPE_SHARED).Get_size()
print(json.dumps({"rank": world.Get_rank(), "fences": fences, "names": names, "shared": shared}))
"""


def _run(ompy, variant: str) -> list[dict]:
    result = ompy.run(["-n", "3", "--oversubscribe", "python", "-c", REPORT, variant])
    assert result.returncode == 0, result.stderr
    return sorted(
        (json.loads(line) for line in result.stdout.splitlines()), key=lambda r: r["rank"]
    )


def test_with_the_job_map_init_needs_one_fence_less_and_sees_the_same_world(ompy):
    with_map, without_map = _run(ompy, "with-map"), _run(ompy, "without-map")
    for report in (*with_map, *without_map):
        assert report["names"] == [report["names"][0]] * 3  # one node, named alike
        assert report["shared"] == 3  # every rank knows its peers are on its node
    assert {r["fences"] for r in without_map} == {3}  # placement, contacts, end of init
    assert {r["fences"] for r in with_map} == {2}  # contacts, end of init
