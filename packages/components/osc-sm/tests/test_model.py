"""Random RMA programs against a sequential model, in every synchronisation mode.

A program is a list of epochs; in each epoch every rank issues random operations.  They never
conflict in a way MPI leaves undefined: each origin puts into slots it owns (at most once per
slot and epoch), accumulates (SUM, commutative and atomic) go to a shared area, and gets read
only slots nobody changes in that epoch.  The model applies every epoch's operations in any
order and must match every rank's memory at the end, and every get must return the model's
value at the start of its epoch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ompy.ompi.datatype.buffer import parse_buffer
from ompy.ompi.datatype.predefined import INT64_T
from ompy.ompi.mca.osc import LOCK_SHARED, Target
from ompy.ompi.op.handle import SUM

OWN = 3  # slots each origin owns on every rank
SHARED = 4  # slots every origin accumulates into
MODES = ["fence", "pscw", "lock", "lock_all"]


def slots(size: int) -> int:
    return size * OWN + SHARED


def operation(size: int) -> st.SearchStrategy[tuple[Any, ...]]:
    target = st.integers(0, size - 1)
    return st.one_of(
        st.tuples(st.just("put"), target, st.integers(0, OWN - 1), st.integers(-50, 50)),
        st.tuples(st.just("acc"), target, st.integers(0, SHARED - 1), st.integers(-50, 50)),
        st.tuples(st.just("fop"), target, st.integers(0, SHARED - 1), st.integers(-50, 50)),
        st.tuples(st.just("get"), target, st.integers(0, slots(size) - 1), st.just(0)),
    )


def program(size: int) -> st.SearchStrategy[list[list[list[tuple[Any, ...]]]]]:
    epoch = st.lists(st.lists(operation(size), max_size=6), min_size=size, max_size=size)
    return st.lists(epoch, min_size=1, max_size=4)


def legal(epochs: list[list[list[tuple[Any, ...]]]], size: int) -> list[list[list[tuple]]]:
    """Drop what MPI leaves undefined: repeated puts to one slot, gets of changing slots."""
    kept = []
    for epoch in epochs:
        changed: set[tuple[int, int]] = set()
        puts: set[tuple[int, int, int]] = set()
        for origin, ops in enumerate(epoch):
            for kind, target, slot, _ in ops:
                if kind == "put":
                    changed.add((target, origin * OWN + slot))
                elif kind in ("acc", "fop"):
                    changed.add((target, size * OWN + slot))
        rounds = []
        for origin, ops in enumerate(epoch):
            mine = []
            for op in ops:
                kind, target, slot, _value = op
                if kind == "put":
                    if (origin, target, slot) in puts:
                        continue
                    puts.add((origin, target, slot))
                if kind == "get" and (target, slot) in changed:
                    continue
                mine.append(op)
            rounds.append(mine)
        kept.append(rounds)
    return kept


def model(epochs: list[list[list[tuple]]], size: int) -> tuple[np.ndarray, list[list[int]]]:
    memory = np.zeros((size, slots(size)), np.int64)
    gets: list[list[int]] = [[] for _ in range(size)]
    for epoch in epochs:
        start = memory.copy()
        for origin, ops in enumerate(epoch):
            for kind, target, slot, value in ops:
                if kind == "put":
                    memory[target, origin * OWN + slot] = value
                elif kind in ("acc", "fop"):
                    memory[target, size * OWN + slot] += value
                else:
                    gets[origin].append(int(start[target, slot]))
    return memory, gets


@pytest.fixture(name="worlds")
def _worlds(make_world):  # type: ignore[no-untyped-def]
    """One world per size for all the examples of a test (windows come and go in it)."""
    made: dict[int, Any] = {}

    def get(size: int) -> Any:
        if size not in made:
            made[size] = make_world(size)
        return made[size]

    return get


def run_epoch(module: Any, mode: str, rank: int, size: int, ops: list[tuple]) -> list[int]:
    everyone = list(range(size))
    if mode == "fence":
        module.fence(0)
    elif mode == "pscw":
        module.post(everyone, 0)
        module.start(everyone, 0)
    elif mode == "lock_all":
        module.lock_all(0)
    got = []
    for kind, target, slot, value in ops:
        if mode == "lock":
            module.lock(LOCK_SHARED, target, 0)
        if kind == "put":
            module.put(
                parse_buffer(np.array([value])), Target(target, rank * OWN + slot, 1, INT64_T)
            )
        elif kind == "acc":
            shared = Target(target, size * OWN + slot, 1, INT64_T)
            module.accumulate(parse_buffer(np.array([value])), shared, SUM)
        elif kind == "fop":
            shared = Target(target, size * OWN + slot, 1, INT64_T)
            out = np.zeros(1, np.int64)
            module.get_accumulate(
                parse_buffer(np.array([value])), parse_buffer(out, readonly=False), shared, SUM
            )
        else:
            out = np.full(1, -999, np.int64)
            module.get(parse_buffer(out, readonly=False), Target(target, slot, 1, INT64_T))
            got.append(int(out[0]))
        if mode == "lock":
            module.unlock(target)
    if mode == "fence":
        module.fence(0)
    elif mode == "pscw":
        module.complete()
        module.wait()
    else:
        if mode == "lock_all":
            module.unlock_all()
        module.fence(0)  # a barrier: the next epoch's gets see this one's changes
    return got


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", [1, 2, 3])
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_random_programs_match_the_sequential_model(
    worlds: Any, mode: str, size: int, data: Any
) -> None:
    epochs = legal(data.draw(program(size)), size)
    memory, gets = model(epochs, size)
    world = worlds(size)
    modules = world.window([8 * slots(size)] * size, disp_unit=8)

    def body(rank: int) -> list[int]:
        got = []
        for epoch in epochs:
            got += run_epoch(modules[rank], mode, rank, size, epoch[rank])
        return got

    results = world.run(body)
    for rank in range(size):
        assert list(np.frombuffer(modules[rank].memory, np.int64)) == list(memory[rank])
        assert results[rank] == gets[rank]
    world.free(modules)
