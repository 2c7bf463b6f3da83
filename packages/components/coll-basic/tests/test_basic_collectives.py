"""The basic component under the whole MPI collective API, in-process, on 1 to 9 ranks.

Each size runs one loopback world (ranks are threads, the PML a test double that delivers at
once), with ``basic`` as the only coll component, and the full battery of :mod:`battery` on
``COMM_WORLD`` and on communicators made from it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ompy.ompi.api.testing import make_world, run_ranks
from ompy.opal.mca.params import Registry

sys.path.insert(0, str(Path(__file__).parent))
import battery  # shared with the multi-process tests in integration/coll

BASIC_ONLY = Registry(environ={"OMPY_MCA_coll": "basic"}, files=[])


@pytest.mark.parametrize("size", range(1, 10))
def test_every_collective_matches_its_reference(size):
    worlds = make_world(size, registry=BASIC_ONLY)
    assert all(
        world._c.coll.provider(op) == "basic"
        for world in worlds
        for op in ("barrier", "iallreduce")
    )
    run_ranks(worlds, battery.run_battery, timeout=120)
