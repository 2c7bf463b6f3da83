"""The one-step path of small messages and the polling of flags before the progress engine.

A message of at most one fragment (below ``coll_sm_split_min`` for reductions) is one step
written out, on slot views cut to its size and kept per size; a wait polls the flag up to
``coll_sm_poll_count`` times before it enters the engine, unless the node is oversubscribed or
the flags are locked.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.mca.coll.sm import module as sm_module
from ompy.ompi.datatype.buffer import IN_PLACE_SPEC, BufferSpec

PAGE = 4096


def spec(array: np.ndarray, datatype) -> BufferSpec:
    view = memoryview(array).cast("B")
    return BufferSpec(view, array.size, datatype, view)


def test_more_message_sizes_than_the_kept_cuts_all_reduce_right_and_leave_no_view(
    make_world, caplog
):
    """Sizes past the kept ones are cut per call; disable releases every kept cut."""
    size = 3
    world = make_world(size, coll_sm_fragment_size=PAGE)
    world.enable()
    counts = range(1, sm_module._CUT_SIZES + 9)

    def body(rank):
        module, comm = world.modules[rank], world.comms[rank]
        for _ in range(2):  # the second round finds the kept cuts
            for count in counts:
                mine = np.arange(count, dtype=np.int64) * (rank + 1)
                out = np.zeros(count, np.int64)
                module.allreduce(comm, spec(mine, MPI.INT64_T), spec(out, MPI.INT64_T), MPI.SUM)
                assert np.array_equal(out, np.arange(count) * (size * (size + 1) // 2)), count
                buf = np.arange(count, dtype=np.uint8) if rank == 1 else np.zeros(count, np.uint8)
                module.bcast(comm, spec(buf, MPI.BYTE), 1)
                assert np.array_equal(buf, np.arange(count, dtype=np.uint8)), count
        return len(module._cuts)

    assert world.run(body) == [sm_module._CUT_SIZES] * size
    with caplog.at_level(logging.DEBUG, logger="ompy"):
        for rank in range(size):
            world.modules[rank].disable(world.comms[rank])
            world.modules[rank] = None
    assert "stays mapped" not in caplog.text


@pytest.mark.parametrize("size", [2, 3, 5])
def test_one_step_reductions_equal_numpy_on_every_rank(make_world, size):
    """Allreduce and reduce of one fragment: rank order, bit-identical on every rank."""
    world = make_world(size, coll_sm_fragment_size=PAGE)
    world.enable()

    @settings(max_examples=12, deadline=None)
    @given(count=st.integers(1, PAGE // 8), root=st.integers(0, size - 1), in_place=st.booleans())
    def check(count, root, in_place):
        inputs = [np.random.default_rng(r * 31 + count).standard_normal(count) for r in range(size)]
        want = inputs[size - 1].copy()
        for r in range(size - 2, -1, -1):
            want = inputs[r] + want

        def body(rank):
            module, comm = world.modules[rank], world.comms[rank]
            if in_place:
                out = inputs[rank].copy()
                module.allreduce(comm, IN_PLACE_SPEC, spec(out, MPI.DOUBLE), MPI.SUM)
            else:
                out = np.zeros(count)
                sendspec = spec(inputs[rank], MPI.DOUBLE)
                module.allreduce(comm, sendspec, spec(out, MPI.DOUBLE), MPI.SUM)
            got = np.zeros(count)
            mine = spec(inputs[rank].copy(), MPI.DOUBLE)
            target = spec(got, MPI.DOUBLE) if rank == root else None
            module.reduce(comm, mine, target, MPI.MAX, root)
            return out.tobytes(), got.tobytes() if rank == root else None

        results = world.run(body)
        assert {out for out, _ in results} == {want.tobytes()}
        assert results[root][1] == np.maximum.reduce(inputs).tobytes()

    check()


# -- polling before the engine ----------------------------------------------------------------


class _Arrival:
    """Stands in for ``Flags.least``: the peer's flag reaches the step at the ``at``-th check."""

    def __init__(self, at: int) -> None:
        self.at = at
        self.checks = 0

    def __call__(self, _word: int) -> int:
        self.checks += 1
        return 1 if self.checks >= self.at else 0


def _flags_with(world, arrival: _Arrival):
    flags = world.modules[0].flags
    flags.least = arrival
    entered: list[int] = []

    def wait_until(predicate):
        entered.append(arrival.checks)
        for _ in range(10 * arrival.at):
            if predicate():
                return True
        raise AssertionError("the flag never reached the step")

    flags.engine.wait_until = wait_until
    return flags, entered


def test_a_peer_arriving_within_the_polls_is_seen_without_the_engine(make_world):
    world = make_world(2, coll_sm_fragment_size=PAGE, coll_sm_poll_count=50)
    world.enable()
    arrival = _Arrival(at=30)
    flags, entered = _flags_with(world, arrival)
    flags.wait_all(0, 1)
    assert entered == []
    assert arrival.checks == 30


def test_a_late_peer_is_waited_for_in_the_engine_after_the_polls(make_world):
    world = make_world(2, coll_sm_fragment_size=PAGE, coll_sm_poll_count=50)
    world.enable()
    arrival = _Arrival(at=500)
    flags, entered = _flags_with(world, arrival)
    flags.wait_all(0, 1)
    assert entered == [1 + 50]  # the first check, then every poll, then the engine
    assert arrival.checks == 500


@pytest.mark.parametrize("why", ["locked", "no polls"], ids=lambda why: why.replace(" ", "-"))
def test_no_polling_when_a_check_is_a_system_call_or_none_is_asked(make_world, why):
    params = {"coll_sm_fragment_size": PAGE, "coll_sm_poll_count": 50}
    if why == "locked":
        params["coll_sm_lockfree"] = "no"
    else:
        params["coll_sm_poll_count"] = 0
    world = make_world(2, **params)
    world.enable()
    arrival = _Arrival(at=5)
    flags, entered = _flags_with(world, arrival)
    flags.wait_all(0, 1)
    assert entered == [1]  # straight to the engine after the first check


def test_an_oversubscribed_rank_yields_the_core_before_each_check(make_world, monkeypatch):
    world = make_world(2, coll_sm_fragment_size=PAGE, coll_sm_poll_count=50)
    world.enable()
    world.comms[0].engine.yield_when_idle = True
    arrival = _Arrival(at=20)
    yields: list[int] = []
    monkeypatch.setattr(os, "sched_yield", lambda: yields.append(arrival.checks))
    flags, entered = _flags_with(world, arrival)
    flags.wait_all(0, 1)
    assert entered == []
    assert yields == list(range(1, 20))  # a yield between any two checks


def test_a_negative_poll_count_is_refused_with_its_name(make_world):
    with pytest.raises(Exception, match="coll_sm_poll_count"):
        make_world(2, coll_sm_poll_count=-1).enable()
