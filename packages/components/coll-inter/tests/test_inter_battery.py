"""The intercommunicator battery (``inter_battery.py``) in-process, over the loopback PML.

Worlds of 2 to 5 ranks (odd sizes give unequal groups); every check of the battery must pass
on every rank.  A property test draws any partition into two groups and any counts for the
vector collectives.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
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
        assert any("start 2: Reduce_scatter_init" in name for name in passed)
        assert any("persistent Barrier_init started 21 times" in name for name in passed)


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_vector_collectives_on_any_partition_with_any_counts(data):
    """Any two-group partition of 2 to 6 ranks, any per-pair counts (zero included): the
    vector collectives and Reduce_scatter move exactly what each rank computes it must get."""
    size = data.draw(st.integers(2, 6), label="size")
    colors = data.draw(
        st.lists(st.integers(0, 1), min_size=size, max_size=size).filter(
            lambda c: 0 < sum(c) < len(c)
        ),
        label="colors",
    )
    # counts[a][b]: elements from world rank a to world rank b (across the groups)
    counts = data.draw(
        st.lists(
            st.lists(st.integers(0, 3), min_size=size, max_size=size), min_size=size, max_size=size
        ),
        label="counts",
    )
    total = data.draw(st.integers(0, 6), label="reduce-scatter elements per group")
    groups = [[r for r in range(size) if colors[r] == c] for c in (0, 1)]
    shares = [
        data.draw(
            st.lists(st.integers(0, total), min_size=len(g) - 1, max_size=len(g) - 1), label="cuts"
        )
        for g in groups
    ]

    def cut(color):
        points = sorted(shares[color])
        return [b - a for a, b in zip([0, *points], [*points, total], strict=True)]

    def body(world):
        me = world.Get_rank()
        color = colors[me]
        theirs = groups[1 - color]
        local = world.Split(color, me)
        inter = local.Create_intercomm(0, world, theirs[0], tag=1)
        local.Free()
        rank = inter.Get_rank()
        # Alltoallv
        scounts = [counts[me][w] for w in theirs]
        rcounts = [counts[w][me] for w in theirs]
        sdispls = [sum(scounts[:i]) for i in range(len(theirs))]
        rdispls = [sum(rcounts[:i]) for i in range(len(theirs))]
        send = np.concatenate(
            [np.full(counts[me][w], me * 10.0 + w) for w in theirs] or [np.zeros(0)]
        )
        recv = np.full(sum(rcounts), -1.0)
        inter.Alltoallv(
            [send, (scounts, sdispls), MPI.DOUBLE], [recv, (rcounts, rdispls), MPI.DOUBLE]
        )
        expect = np.concatenate(
            [np.full(counts[w][me], w * 10.0 + me) for w in theirs] or [np.zeros(0)]
        )
        assert np.array_equal(recv, expect), ("Alltoallv", me)
        # Allgatherv: world rank w sends counts[w][w] elements to everyone across
        gcounts = [counts[w][w] for w in theirs]
        gathered = np.full(sum(gcounts), -1.0)
        request = inter.Iallgatherv(
            np.full(counts[me][me], float(me)),
            [gathered, (gcounts, [sum(gcounts[:i]) for i in range(len(theirs))]), MPI.DOUBLE],
        )
        request.Wait()
        expect = np.concatenate([np.full(counts[w][w], float(w)) for w in theirs] or [np.zeros(0)])
        assert np.array_equal(gathered, expect), ("Iallgatherv", me)
        # Reduce_scatter: this group's cut of the other group's reduction
        mycounts = cut(color)
        out = np.full(mycounts[rank], -1.0)
        inter.Reduce_scatter(np.arange(total, dtype="d") * (me + 1), out, mycounts, op=MPI.SUM)
        start = sum(mycounts[:rank])
        factor = sum(w + 1 for w in theirs)
        assert np.allclose(out, np.arange(start, start + mycounts[rank]) * factor), ("Rs", me)
        inter.Free()
        return True

    assert run_ranks(make_world(size), body, timeout=60) == [True] * size
