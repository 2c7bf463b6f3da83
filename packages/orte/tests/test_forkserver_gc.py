"""The fork server preloads without the cyclic collector and freezes what it imported."""

from __future__ import annotations

import gc

import pytest

from ompy.orte.launcher.forkserver.zygote import _preload_frozen


@pytest.fixture
def unfrozen():
    """Put the frozen objects back into the collector's care after the test."""
    assert gc.isenabled()
    yield
    gc.unfreeze()
    assert gc.isenabled()


class Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector could free it


def test_preloading_runs_without_the_collector_and_freezes_what_it_made(unfrozen):
    seen: dict[str, object] = {}

    def preload() -> list[str]:
        seen["enabled"] = gc.isenabled()
        seen["made"] = [Node() for _ in range(1000)]
        return ["a failure"]

    before = gc.get_freeze_count()
    assert _preload_frozen(preload) == ["a failure"]
    assert seen["enabled"] is False
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + 1000  # the preload's objects are frozen
    assert not any(gc.is_tracked(o) and o in gc.get_objects(0) for o in seen["made"][:3])


def test_a_failing_preload_leaves_the_collector_enabled(unfrozen):
    def preload() -> list[str]:
        raise RuntimeError("broken entry")

    with pytest.raises(RuntimeError, match="broken entry"):
        _preload_frozen(preload)
    assert gc.isenabled()
