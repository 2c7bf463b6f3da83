"""Fixtures of the ob1 tests; the harness itself is :mod:`ob1_harness` (importable by tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # importlib mode: let tests import the harness

from ob1_harness import World


@pytest.fixture
def make_world():
    """``make_world(size, btl, **params)``; every world is finalized and checked at the end."""
    worlds: list[World] = []
    fds_before = len(os.listdir("/proc/self/fd"))

    def make(size: int = 1, btl: str = "self", **params: object) -> World:
        world = World(size, btl, **params)
        worlds.append(world)
        return world

    yield make
    for world in worlds:
        for pml in [] if world.finalized else world.pmls:
            assert pml.idle, f"{pml} still has sends or queued work"
            assert not pml._recvs, f"receives still waiting for fragments: {pml._recvs}"
        world.finalize()
    assert len(os.listdir("/proc/self/fd")) <= fds_before, "file descriptors leaked"
