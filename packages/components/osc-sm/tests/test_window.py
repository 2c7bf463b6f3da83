"""The sm module on in-process worlds: memory, RMA, atomicity and synchronisation."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from ompy.ompi.constants import PROC_NULL
from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.datatype.predefined import DOUBLE, INT64_T
from ompy.ompi.errors import ERR_RMA_RANGE
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.osc import (
    FLAVOR_ALLOCATE,
    FLAVOR_CREATE,
    FLAVOR_DYNAMIC,
    FLAVOR_SHARED,
    LOCK_EXCLUSIVE,
    LOCK_SHARED,
    OscQuery,
    Target,
)
from ompy.ompi.op.handle import MAX, NO_OP, REPLACE, SUM


def spec(array: np.ndarray, readonly: bool = True):  # type: ignore[no-untyped-def]
    return parse_buffer(array, readonly=readonly)


def test_declines_program_memory_dynamic_windows_and_several_nodes(make_world) -> None:
    world = make_world(2)
    comm = world.comms[0]
    for flavor in (FLAVOR_CREATE, FLAVOR_DYNAMIC):
        assert world.component.query(OscQuery(flavor, comm, 8, 1)) is None
    for flavor in (FLAVOR_ALLOCATE, FLAVOR_SHARED):
        assert world.component.query(OscQuery(flavor, comm, 8, 1)) is not None
    spread = make_world(2, nodes=[0, 1])
    assert spread.component.query(OscQuery(FLAVOR_SHARED, spread.comms[0], 8, 1)) is None


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_shared_memory_is_contiguous_and_loads_see_stores(make_world, size: int) -> None:
    world = make_world(size)
    sizes = [8 * (r + 1) for r in range(size)]
    modules = world.window(sizes, disp_unit=8)

    def body(rank: int) -> None:
        module = modules[rank]
        mine = np.frombuffer(module.memory, np.int64)
        assert mine.size == rank + 1
        mine[:] = 100 * rank + np.arange(rank + 1)
        module.fence(0)
        first, unit = module.shared_query(0)
        assert unit == 8
        whole = np.frombuffer(first.obj, np.uint8)  # the mapping: ranks follow one another
        base = np.frombuffer(first, np.uint8).ctypes.data
        for peer in range(size):
            view, _ = module.shared_query(peer)
            offset = np.frombuffer(view, np.uint8).ctypes.data - base if view.nbytes else 0
            assert offset == sum(sizes[:peer])
            assert list(np.frombuffer(view, np.int64)) == [100 * peer + i for i in range(peer + 1)]
        del whole, first, view
        module.fence(0)

    world.run(body)
    world.free(modules)


def test_noncontig_hint_puts_every_rank_on_its_own_page(make_world) -> None:
    world = make_world(3)
    modules = world.window([10, 10, 10], info={"alloc_shared_noncontig": "true"})
    starts = [np.frombuffer(modules[0].shared_query(r)[0], np.uint8).ctypes.data for r in range(3)]
    assert all(start % 4096 == 0 for start in starts)
    world.free(modules)


def test_put_get_and_range_errors(make_world) -> None:
    world = make_world(3)
    modules = world.window([80] * 3, disp_unit=8)

    def body(rank: int) -> None:
        module = modules[rank]
        module.fence(0)
        right = (rank + 1) % 3
        module.put(spec(np.full(4, rank, np.float64)), Target(right, 2, 4, DOUBLE))
        module.fence(0)
        got = np.zeros(10)
        request = module.get(spec(got, readonly=False), Target(rank, 0, 10, DOUBLE))
        assert request.complete
        left = (rank - 1) % 3
        assert list(got) == [0, 0, left, left, left, left, 0, 0, 0, 0]
        with pytest.raises(MPIException) as caught:
            module.put(spec(np.zeros(4)), Target(right, 7, 4, DOUBLE))
        assert caught.value.Get_error_class() == ERR_RMA_RANGE
        module.fence(0)

    world.run(body)
    world.free(modules)


@pytest.mark.parametrize("size", [2, 4])
def test_concurrent_fetch_and_op_never_loses_an_increment(make_world, size: int) -> None:
    world = make_world(size)
    modules = world.window([8] + [0] * (size - 1), disp_unit=8)
    rounds = 200

    def body(rank: int) -> list[int]:
        module = modules[rank]
        module.lock_all(0)
        seen = []
        one = np.ones(1, np.int64)
        for _ in range(rounds):
            old = np.zeros(1, np.int64)
            module.get_accumulate(spec(one), spec(old, False), Target(0, 0, 1, INT64_T), SUM)
            seen.append(int(old[0]))
        module.unlock_all()
        module.fence(0)
        return seen

    seen = [value for values in world.run(body) for value in values]
    assert sorted(seen) == list(range(size * rounds))  # every fetch saw a distinct count
    assert int(np.frombuffer(modules[0].memory, np.int64)[0]) == size * rounds
    world.free(modules)


def test_accumulate_ops_compare_and_swap_and_no_op(make_world) -> None:
    world = make_world(2)
    modules = world.window([32, 32], disp_unit=8)

    def body(rank: int) -> None:
        module = modules[rank]
        module.fence(0)
        module.accumulate(spec(np.array([rank + 5.0, -1.0])), Target(0, 0, 2, DOUBLE), MAX)
        module.fence(0)
        if rank == 0:
            assert list(np.frombuffer(module.memory, np.float64)[:2]) == [6.0, 0.0]
            module.accumulate(spec(np.array([1.5])), Target(1, 3, 1, DOUBLE), REPLACE)
            out = np.zeros(1)
            module.get_accumulate(None, spec(out, False), Target(1, 3, 1, DOUBLE), NO_OP)
            assert out[0] == 1.5
            old = np.zeros(1)
            module.compare_and_swap(
                spec(np.array([9.0])),
                spec(np.array([2.0])),
                spec(old, False),
                Target(1, 3, 1, DOUBLE),
            )
            assert old[0] == 1.5  # no match: unchanged
            module.compare_and_swap(
                spec(np.array([9.0])),
                spec(np.array([1.5])),
                spec(old, False),
                Target(1, 3, 1, DOUBLE),
            )
            assert old[0] == 1.5
        module.fence(0)
        if rank == 1:
            assert np.frombuffer(module.memory, np.float64)[3] == 9.0
        module.fence(0)

    world.run(body)
    world.free(modules)


def test_pscw_delivers_puts_when_start_comes_before_post(make_world) -> None:
    world = make_world(3)
    modules = world.window([24] * 3, disp_unit=8)

    def body(rank: int) -> None:
        module = modules[rank]
        for epoch in range(5):
            if rank == 0:  # origin: starts before the targets post
                module.start([1, 2], 0)
                for target in (1, 2):
                    module.put(
                        spec(np.array([epoch], np.int64)), Target(target, epoch % 3, 1, INT64_T)
                    )
                module.complete()
            else:
                module.post([0], 0)
                module.wait()
                assert np.frombuffer(module.memory, np.int64)[epoch % 3] == epoch
        assert modules[rank].test() is True  # no exposure epoch open: nothing to wait for

    world.run(body)
    world.free(modules)


def test_exclusive_lock_makes_read_modify_write_epochs_atomic(make_world) -> None:
    world = make_world(3)
    modules = world.window([8, 0, 0], disp_unit=8)
    rounds = 40

    def body(rank: int) -> None:
        module = modules[rank]
        for _ in range(rounds):
            module.lock(LOCK_EXCLUSIVE, 0, 0)
            value = np.zeros(1, np.int64)
            module.get(spec(value, False), Target(0, 0, 1, INT64_T))
            module.put(spec(value + 1), Target(0, 0, 1, INT64_T))
            module.unlock(0)
        module.lock(LOCK_SHARED, 0, 0)
        module.unlock(0)
        module.fence(0)

    world.run(body)
    assert int(np.frombuffer(modules[0].memory, np.int64)[0]) == 3 * rounds
    world.free(modules)


def test_free_with_views_alive_leaves_nothing_behind(make_world) -> None:
    world = make_world(2)
    modules = world.window([16, 16])
    kept = [modules[r].shared_query(1)[0] for r in range(2)]
    world.free(modules)
    assert bytes(kept[0]) == bytes(16)
    del kept


def test_windows_without_memory_still_synchronise(make_world) -> None:
    world = make_world(3)
    modules = world.window([0, 0, 0])

    def body(rank: int) -> None:
        module = modules[rank]
        module.fence(0)
        assert module.memory.nbytes == 0
        assert module.shared_query(PROC_NULL)[0].nbytes == 0
        module.post([r for r in range(3) if r != rank], 0)
        module.start([r for r in range(3) if r != rank], 0)
        module.complete()
        module.wait()
        module.fence(0)

    world.run(body)
    world.free(modules)


def test_threads_of_one_rank_accumulate_atomically(make_world) -> None:
    # Large accumulates: numpy releases the GIL inside the loop, so without the rank's own
    # lock (a record lock never excludes its owner) two threads would lose updates.
    world = make_world(2)
    count = 200_000
    modules = world.window([8 * count, 0], disp_unit=8)
    rounds = 10

    def hammer(module: Any) -> None:
        ones = np.ones(count, np.int64)
        for _ in range(rounds):
            module.accumulate(spec(ones), Target(0, 0, count, INT64_T), SUM)

    def body(rank: int) -> None:
        module = modules[rank]
        module.lock_all(0)
        threads = [threading.Thread(target=hammer, args=(module,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        module.unlock_all()
        module.fence(0)

    world.run(body)
    totals = np.frombuffer(modules[0].memory, np.int64)
    assert (totals == 2 * 3 * rounds).all()
    del totals
    world.free(modules)
