"""Persistent collectives on intercommunicators, in-process over the loopback PML.

The battery (``inter_battery.persistent``, run by ``test_inter_battery``) checks every
``X_init`` start after start; here: the plan is built once (a thousand starts run none of the
set-up), reductions keep rank order on any partition into two groups (a non-commutative
operation), and what the requests answer about themselves.
"""

from __future__ import annotations

import cProfile
import pstats
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.ompi.mca.coll.base import PlanCollective


def halves(world):
    """The intercommunicator between the lower and the upper half of ``world``; the world
    ranks of the remote group."""
    me, size = world.Get_rank(), world.Get_size()
    half = (size + 1) // 2
    low = me < half
    local = world.Split(0 if low else 1, me)
    inter = local.Create_intercomm(0, world, half if low else 0, tag=5)
    local.Free()
    return inter, list(range(half, size)) if low else list(range(half))


#: Functions that set a persistent collective up: none may run during a start.
SETUP = {
    ("persistent.py", "plan_collective"),
    ("persistent.py", "claim"),
    ("persistent.py", "_reduce_to_leader"),
    ("persistent.py", "_scatter_result"),
    ("persistent.py", "_local_bcast"),
    ("persistent.py", "build"),
    ("schedules.py", "local_of"),
    ("inter_collective.py", "_allreduce_args"),
    ("inter_collective.py", "_reduce_scatter_args"),
    ("select.py", "kernel"),
    ("buffer.py", "parse_buffer"),
    ("helpers.py", "binomial_children"),
    ("helpers.py", "binomial_parent"),
    ("staging.py", "__init__"),
    ("tags.py", "next_tag"),
}


def _profile(requests, times):
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(times):
        MPI.Prequest.Startall(requests)
        MPI.Request.Waitall(requests)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    return {(Path(file).name, name): row[1] for (file, _line, name), row in stats.items()}


def _plan_of(request):
    return next(
        cell.cell_contents
        for cell in request._starter.__closure__
        if isinstance(cell.cell_contents, PlanCollective)
    )


@pytest.mark.parametrize("size", [2, 3, 5])
def test_a_thousand_starts_replay_the_plan_built_at_init(size):
    def body(world):
        inter, theirs = halves(world)
        rank, local_size = inter.Get_rank(), inter.Get_size()
        mine, total = np.zeros(4), np.zeros(4)
        # both groups reduce 4 * (their size) * (the other's) elements: 4 * remote size each
        counts = [4 * inter.Get_remote_size()] * local_size
        source, piece = np.zeros(sum(counts)), np.zeros(counts[rank])
        requests = [
            inter.Allreduce_init(mine, total, MPI.SUM),
            inter.Reduce_scatter_init(source, piece, counts, MPI.SUM),
        ]
        plans = [_plan_of(request) for request in requests]
        built = [plan.plan for plan in plans]
        first = _profile(requests, 10)
        mine[...] = world.Get_rank() + 1
        source[...] = world.Get_rank() + 1
        thousand = _profile(requests, 1000)
        expect = sum(w + 1 for w in theirs)
        assert (total == expect).all() and (piece == expect).all()
        assert [plan.starts for plan in plans] == [1010, 1010]
        assert [plan.plan for plan in plans] == built
        ran = sorted(SETUP & (set(first) | set(thousand)))
        assert not ran, f"set-up functions ran during the starts: {ran}"
        for request in requests:
            request.Free()
        inter.Free()
        return True

    assert all(run_ranks(make_world(size), body, timeout=120))


def _compose(inbuf, inoutbuf, datatype):
    """``inout = in op inout`` on pairs ``(m, c)``, the maps ``x -> m x + c``: ``in`` first,
    then ``inout`` (associative, not commutative).  Contributions ``(10, digit)`` compose to
    ``(10 ** n, the digits in rank order)``."""
    a = np.frombuffer(inbuf, dtype="d")
    b = np.frombuffer(inoutbuf, dtype="d")
    b[1::2] = a[1::2] * b[0::2] + b[1::2]
    b[0::2] = a[0::2] * b[0::2]


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_persistent_reductions_keep_rank_order_on_any_partition(data):
    """Any two-group partition of 2 to 6 ranks; a non-commutative operation (composing affine
    maps): Allreduce_init and Reduce_init give the digits of the other group's world ranks in
    its rank order, start after start."""
    size = data.draw(st.integers(2, 6), label="size")
    colors = data.draw(
        st.lists(st.integers(0, 1), min_size=size, max_size=size).filter(
            lambda c: 0 < sum(c) < len(c)
        ),
        label="colors",
    )
    groups = [[r for r in range(size) if colors[r] == c] for c in (0, 1)]
    root_color = data.draw(st.integers(0, 1), label="root group")
    root_index = data.draw(st.integers(0, len(groups[root_color]) - 1), label="root")

    def digits(ranks, offset):
        return float("".join(str(r + offset) for r in ranks))

    def body(world):
        me = world.Get_rank()
        color = colors[me]
        theirs = groups[1 - color]
        local = world.Split(color, me)
        inter = local.Create_intercomm(0, world, theirs[0], tag=1)
        local.Free()
        if color == root_color:
            root = MPI.ROOT if inter.Get_rank() == root_index else MPI.PROC_NULL
        else:
            root = root_index
        op = MPI.Op.Create(_compose, commute=False)
        mine, total, reduced = np.zeros(2), np.zeros(2), np.zeros(2)
        requests = [
            inter.Allreduce_init(mine, total, op),
            inter.Reduce_init(mine, reduced, op, root),
        ]
        for offset in (1, 2, 3):
            mine[...] = (10, me + offset)
            MPI.Prequest.Startall(requests)
            MPI.Request.Waitall(requests)
            expect = [10.0 ** len(theirs), digits(theirs, offset)]
            assert list(total) == expect, ("Allreduce_init", me, offset, total)
            if root == MPI.ROOT:
                assert list(reduced) == expect, ("Reduce_init", me, offset, reduced)
        for request in requests:
            request.Free()
        op.Free()
        inter.Free()
        return True

    assert run_ranks(make_world(size), body, timeout=60) == [True] * size


def test_a_start_of_a_process_outside_a_rooted_operation_completes_at_once():
    """``root=PROC_NULL``: an empty plan, each start complete without any transfer."""

    def body(world):
        inter, _theirs = halves(world)
        low = world.Get_rank() < (world.Get_size() + 1) // 2
        rank = inter.Get_rank()
        root = (MPI.ROOT if rank == 0 else MPI.PROC_NULL) if low else 0
        buf = np.arange(3.0) if root == MPI.ROOT else np.zeros(3)
        request = inter.Bcast_init(buf, root=root)
        plan = _plan_of(request)
        request.Start()
        request.Wait()
        outside = plan.plan.transfers == 0
        if root == MPI.PROC_NULL:
            assert outside
            request.Start()
            assert request.Test()
        else:
            assert not outside and (buf == np.arange(3.0)).all()
            request.Start()
            request.Wait()
        request.Free()
        inter.Free()
        return True

    assert all(run_ranks(make_world(3), body, timeout=60))


@pytest.mark.parametrize("size", [2, 5])
def test_persistent_and_other_collectives_run_together(size):
    """A started persistent collective and blocking and nonblocking collectives of the same
    intercommunicator in flight at once never take each other's messages (own tags)."""

    def body(world):
        inter, theirs = halves(world)
        me = world.Get_rank()
        mine, persistent_total = np.zeros(3), np.zeros(3)
        request = inter.Allreduce_init(mine, persistent_total)
        for step in range(5):
            mine[...] = me + step
            request.Start()
            blocking = np.zeros(3)
            inter.Allreduce(np.full(3, 100.0 * me), blocking)
            gathered = np.zeros((inter.Get_remote_size(), 3))
            pending = inter.Iallgather(np.full(3, float(me + step)), gathered)
            barrier = inter.Ibarrier()
            MPI.Request.Waitall([barrier, request, pending])
            assert (persistent_total == sum(w + step for w in theirs)).all()
            assert (blocking == 100.0 * sum(theirs)).all()
            assert [row[0] for row in gathered] == [w + step for w in theirs]
        request.Free()
        inter.Free()
        return True

    assert all(run_ranks(make_world(size), body, timeout=60))
