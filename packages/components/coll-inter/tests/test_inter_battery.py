"""The intercommunicator battery (``inter_battery.py``) in-process, over the loopback PML.

Worlds of 2 to 5 ranks (odd sizes give unequal groups); every check of the battery must pass
on every rank, and every rank must pass the same number of checks of each shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ompy.ompi.api.testing import make_world, run_ranks

sys.path.insert(0, str(Path(__file__).parent))
from inter_battery import run_inter_battery  # shared with integration/intercomm


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_every_intercommunicator_check_passes(size):
    results = run_ranks(make_world(size), run_inter_battery, timeout=120)
    assert len(results) == size
    for passed in results:
        assert len(passed) > 100
        assert any("Reduce_scatter" in name for name in passed)
        assert any("one-vs-rest" in name for name in passed)
