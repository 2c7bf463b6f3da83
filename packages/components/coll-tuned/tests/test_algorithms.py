"""Every algorithm of coll/tuned, forced one by one, in-process on 1 to 9 loopback ranks.

Each size runs one loopback world (ranks are threads, the PML a test double that delivers at
once) and the whole battery of :mod:`tuned_battery` on ``COMM_WORLD`` and on halves of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ompy.ompi.api.testing import make_world, run_ranks

sys.path.insert(0, str(Path(__file__).parent))
import tuned_battery  # shared with the multi-process tests in integration/coll_tuned


@pytest.mark.parametrize("size", range(1, 10))
def test_every_algorithm_matches_its_reference(size):
    passed = run_ranks(make_world(size), tuned_battery.run_battery, timeout=120)
    names = set(passed[0])
    assert all(set(p) == names for p in passed), "ranks ran different checks"
    for operation, choices in tuned_battery.ALGORITHMS.items():
        for name in choices:
            assert f"{operation}:{name}" in names
