"""``ompy.util.sync`` on in-process loopback worlds (one thread per rank).

The multi-process runs over sm and tcp are ``integration/pyhelpers/test_sync.py``.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ompy import MPI
from ompy.ompi.api.testing import make_world, run_ranks
from ompy.util.sync import Condition, Counter, Mutex, Semaphore, Sequential


def on_ranks(size, body):
    return run_ranks(make_world(size), body, timeout=60)


def stay(comm, seconds):
    """Stay ``seconds`` inside a section while serving the other ranks' RMA (a loopback rank's
    window is served only from its own progress passes, and a sleeping rank makes none)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        comm.Iprobe()
        time.sleep(0.0005)


# -- Counter ------------------------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(
    start=st.integers(-1000, 1000),
    steps=st.lists(st.lists(st.integers(0, 50), max_size=6), min_size=1, max_size=3),
)
def test_counter_draws_match_a_sequential_model(start, steps):
    """Whatever the interleaving of the ranks' increments, the draws chain up: ordered by value
    (a zero increment, which only reads, before a real one of the same value), each is the sum
    of ``start`` and the increments before it, and the final value adds every increment."""
    size = len(steps)

    def body(comm):
        counter = Counter(start, comm=comm, root=size - 1)
        drawn = [counter.next(incr) for incr in steps[comm.rank]]
        comm.Barrier()
        final = counter.next(0)
        counter.free()
        return drawn, final

    results = on_ranks(size, body)
    draws = sorted(
        (value, incr)
        for (drawn, _), mine in zip(results, steps, strict=True)
        for value, incr in zip(drawn, mine, strict=True)
    )
    value = start
    for drawn_value, incr in draws:
        assert drawn_value == value
        value += incr
    assert [final for _, final in results] == [value] * size


def test_counter_iterates_with_its_step_and_typecode():
    def body(comm):
        counter = Counter(10, 5, typecode="q", comm=comm)
        values = [next(counter) for _ in range(3)]
        everyone = sorted(v for mine in comm.allgather(values) for v in mine)
        assert iter(counter) is counter
        counter.free()
        counter.free()  # freeing twice is harmless
        with pytest.raises(RuntimeError, match="counter already freed"):
            counter.next()
        return everyone

    assert on_ranks(3, body)[0] == [10 + 5 * k for k in range(9)]


def test_counter_refuses_a_root_outside_the_communicator():
    def body(comm):
        with pytest.raises(MPI.Exception) as caught:
            Counter(comm=comm, root=2)
        assert caught.value.Get_error_class() == MPI.ERR_ROOT
        assert "root 2 is not a rank of the communicator (size 2)" in str(caught.value)
        with pytest.raises(TypeError):
            Counter(comm=comm, root="0")
        counter = Counter(comm=comm, root=np.int64(1))  # any integer
        assert counter.next() in (0, 1)
        counter.free()

    on_ranks(2, body)


# -- Mutex --------------------------------------------------------------------------------------


def test_mutex_keeps_ranks_apart():
    inside: list[int] = []
    overlaps: list[tuple[int, ...]] = []
    guard = threading.Lock()

    def body(comm):
        mutex = Mutex(comm=comm)
        for _ in range(20):
            with mutex:
                assert mutex.locked()
                with guard:
                    inside.append(comm.rank)
                    if len(inside) > 1:
                        overlaps.append(tuple(inside))
                stay(comm, 0.002)  # room for another rank to come in, were it let in
                with guard:
                    inside.remove(comm.rank)
            assert not mutex.locked()
        comm.Barrier()
        mutex.free()

    on_ranks(3, body)
    assert overlaps == []


def test_mutex_errors_and_recursion():
    def body(comm):
        plain = Mutex(comm=comm)
        with pytest.raises(RuntimeError, match="cannot release unheld mutex"):
            plain.release()
        assert plain.acquire(blocking=False)
        with pytest.raises(RuntimeError, match="cannot acquire already held mutex"):
            plain.acquire()
        assert plain.count() == 1
        plain.free()  # releases first
        for call in (plain.acquire, plain.release, plain.locked, plain.count):
            with pytest.raises(RuntimeError, match="mutex already freed"):
                call()
        plain.free()

        deep = Mutex(recursive=True, comm=comm)
        for depth in range(1, 4):
            assert deep.acquire()
            assert deep.count() == depth
        for depth in range(2, -1, -1):
            deep.release()
            assert deep.count() == depth
        assert not deep.locked()
        deep.free()

    on_ranks(1, body)


def test_mutex_nonblocking_acquire_fails_while_another_rank_holds_it():
    def body(comm):
        mutex = Mutex(comm=comm)
        if comm.rank == 1:
            mutex.acquire()
        comm.Barrier()
        got = mutex.acquire(blocking=False) if comm.rank != 1 else None
        comm.Barrier()
        if comm.rank == 1:
            mutex.release()
        comm.Barrier()
        mutex.free()
        return got

    assert on_ranks(3, body) == [False, None, False]


# -- Condition ----------------------------------------------------------------------------------


def test_condition_notify_wakes_waiters_one_by_one():
    def body(comm):
        cond = Condition(comm=comm)
        waiting = Counter(comm=comm)
        woken = 0
        if comm.rank == 0:
            calls = []
            while not calls:
                with cond:
                    if waiting.next(0) == comm.size - 1:
                        calls = [cond.notify(1) for _ in range(comm.size - 1)]
                        calls.append(cond.notify_all())
        else:
            with cond:
                waiting.next()
                woken = cond.wait()
        comm.Barrier()
        cond.free()
        waiting.free()
        return calls if comm.rank == 0 else woken

    results = on_ranks(4, body)
    assert results == [[1, 1, 1, 0], True, True, True]


def test_condition_errors():
    def body(comm):
        with pytest.raises(TypeError, match="mutex must be a Mutex or None, not str"):
            Condition("lock", comm=comm)
        freed = Mutex(comm=comm)
        freed.free()
        with pytest.raises(RuntimeError, match="mutex already freed"):
            Condition(freed, comm=comm)
        mutex = Mutex(comm=comm)
        cond = Condition(mutex)
        with pytest.raises(RuntimeError, match="cannot wait on unheld mutex"):
            cond.wait()
        with pytest.raises(RuntimeError, match="cannot notify on unheld mutex"):
            cond.notify()
        with cond:
            assert mutex.locked() and cond.locked()
            assert cond.wait_for(lambda: 7) == 7
            assert cond.notify_all() == 0
        cond.free()
        assert mutex.acquire()  # the condition did not free a mutex it was given
        mutex.free()
        for call in (cond.acquire, cond.release, cond.wait, cond.notify):
            with pytest.raises(RuntimeError, match="condition already freed"):
                call()

    on_ranks(1, body)


# -- Semaphore ----------------------------------------------------------------------------------


def test_semaphore_admits_at_most_its_slots():
    inside = [0]
    most = [0]
    guard = threading.Lock()

    def body(comm):
        slots = Semaphore(2, comm=comm)
        for _ in range(5):
            with slots:
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                stay(comm, 0.05)  # longer than a rank takes to get in
                with guard:
                    inside[0] -= 1
        comm.Barrier()
        slots.free()

    on_ranks(4, body)
    assert 1 <= most[0] <= 2  # (a semaphore that let everyone in would show 3 or 4)


def test_semaphore_bounds_and_bad_values():
    def body(comm):
        with pytest.raises(ValueError, match="initial value must be non-negative"):
            Semaphore(-1, comm=comm)
        bounded = Semaphore(1, comm=comm)
        with pytest.raises(ValueError, match="increment must be one or more"):
            bounded.release(0)
        with pytest.raises(ValueError, match="semaphore released too many times"):
            bounded.release()
        assert bounded.acquire()
        assert bounded.acquire(blocking=False) is False
        bounded.release()
        bounded.free()
        unbounded = Semaphore(0, bounded=False, comm=comm)
        unbounded.release(3)
        assert [unbounded.acquire(blocking=False) for _ in range(4)] == [True] * 3 + [False]
        unbounded.free()

    on_ranks(1, body)


# -- Sequential ---------------------------------------------------------------------------------


def test_sequential_runs_ranks_in_order():
    order: list[int] = []

    def body(comm):
        sequence = Sequential(comm, tag=7)
        assert sequence.tag == 7 and sequence.comm is comm
        for _ in range(2):
            with sequence:
                time.sleep(0.01 * (comm.size - comm.rank))  # the later ranks would overtake
                order.append(comm.rank)
            comm.Barrier()

    on_ranks(4, body)
    assert order == [0, 1, 2, 3] * 2
