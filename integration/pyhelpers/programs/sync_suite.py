"""``ompy.util.sync`` across ranks: every object used concurrently by every rank of the job.

Checks, each judged on every rank and printed by rank 0 as one JSON line
``{"check": name, "ok": value}`` (``value`` is ``true``, or the failing ranks' messages):

- ``counter``: every rank draws ``ROUNDS`` values at once; together they are exactly
  ``0 .. size*ROUNDS-1`` (no increment lost or repeated), also with a step, a root that is the
  last rank and a 64-bit typecode;
- ``mutex``: inside the mutex each rank checks a shared record (kept on rank 0, read and written
  with plain ``Get``/``Put`` under a *shared* lock, so only the mutex keeps writers apart) is
  free, claims it, pauses, checks it still owns it and adds one to the record's total; the
  total is exactly ``size*ROUNDS`` at the end;
- ``mutex_try``: while rank 0 holds the mutex, a non-blocking acquire fails everywhere else;
  a recursive mutex counts its acquisitions;
- ``condition``: ranks 1.. wait on a condition until rank 0 has seen every one of them waiting;
  ``notify(1)`` then wakes exactly one waiter per call, and a last ``notify`` finds nobody;
- ``condition_predicate``: ``wait_for`` returns once another rank made the predicate true;
- ``semaphore``: a semaphore of two slots never lets three ranks in at once, over many rounds;
  a bounded semaphore refuses a release beyond its start value;
- ``sequential``: ``Sequential`` lets the ranks through in rank order, several times.
"""

import json
import random
import time
import traceback

from ompy import MPI
from ompy.util.sync import Condition, Counter, Mutex, Semaphore, Sequential

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
ROUNDS = 50
FREE = -1  # the shared record's "owner" when nobody is inside the mutex


def judge(name, check):
    """Run ``check`` on every rank; rank 0 prints whether it held everywhere."""
    try:
        check()
        outcome = True
    except Exception:
        outcome = f"rank {rank}: {traceback.format_exc()}"
    outcomes = world.gather(outcome, root=0)
    if rank == 0:
        failures = [o for o in outcomes if o is not True]
        print(json.dumps({"check": name, "ok": failures or True}), flush=True)
    world.Barrier()


def pause(most=0.002):
    time.sleep(most * random.random())


def counter():
    for kwargs, step in [({}, 1), ({"root": size - 1}, 3), ({"typecode": "q"}, 1 << 40)]:
        shared = Counter(0, step, comm=world, **kwargs)
        mine = [next(shared) for _ in range(ROUNDS)]
        everyone = sorted(v for values in world.allgather(mine) for v in values)
        assert everyone == [step * k for k in range(size * ROUNDS)], everyone
        world.Barrier()
        assert shared.next(0) == step * size * ROUNDS
        shared.free()


def mutex():
    record = MPI.Win.Allocate(16 if rank == 0 else 0, 8, comm=world)
    if rank == 0:
        memory = record.tomemory().cast("q")
        memory[0], memory[1] = FREE, 0
    world.Barrier()
    lock = Mutex(comm=world)
    field = bytearray(8)
    for _ in range(ROUNDS):
        with lock:
            record.Lock(0, MPI.LOCK_SHARED)
            record.Get([field, MPI.INT64_T], 0, 0)
            record.Flush(0)
            assert int.from_bytes(field, "little", signed=True) == FREE, "two ranks inside"
            record.Put([rank.to_bytes(8, "little", signed=True), MPI.INT64_T], 0, 0)
            record.Flush(0)
            pause()
            record.Get([field, MPI.INT64_T], 0, 0)
            record.Flush(0)
            assert int.from_bytes(field, "little", signed=True) == rank, "record taken over"
            record.Get([field, MPI.INT64_T], 0, 1)
            record.Flush(0)
            total = int.from_bytes(field, "little", signed=True) + 1
            record.Put([total.to_bytes(8, "little", signed=True), MPI.INT64_T], 0, 1)
            record.Put([FREE.to_bytes(8, "little", signed=True), MPI.INT64_T], 0, 0)
            record.Unlock(0)
        assert not lock.locked()
    world.Barrier()
    if rank == 0:
        assert record.tomemory().cast("q").tolist() == [FREE, size * ROUNDS]
    lock.free()
    record.Free()


def mutex_try():
    lock = Mutex(comm=world)
    if rank == 0:
        assert lock.acquire()
    world.Barrier()
    if rank != 0:
        assert lock.acquire(blocking=False) is False
        assert not lock.locked()
    world.Barrier()
    if rank == 0:
        lock.release()
    world.Barrier()
    lock.free()
    deep = Mutex(recursive=True, comm=world)
    with deep, deep, deep:
        assert deep.count() == 3
    assert deep.count() == 0 and not deep.locked()
    deep.free()


def condition():
    cond = Condition(comm=world)
    waiting = Counter(comm=world)
    woken = Counter(comm=world)
    if rank == 0:
        while True:  # every waiter joins the queue before it releases the mutex
            with cond:
                if waiting.next(0) == size - 1:
                    calls = [cond.notify(1) for _ in range(size - 1)]
                    assert calls == [1] * (size - 1), calls
                    assert cond.notify() == 0
                    break
            pause()
    else:
        with cond:
            waiting.next()
            assert cond.wait() is True
            assert cond.locked()
            woken.next()
    world.Barrier()
    assert woken.next(0) == size - 1
    for obj in (cond, waiting, woken):
        obj.free()


def condition_predicate():
    cond = Condition(Mutex(comm=world), comm=world)
    ready = Counter(comm=world)
    if rank == 0:
        pause(0.05)
        with cond:
            ready.next()
            cond.notify_all()
    else:
        with cond:
            assert cond.wait_for(lambda: ready.next(0)) == 1
    world.Barrier()
    cond.free()
    ready.free()


def semaphore():
    slots = Semaphore(2, comm=world)
    inside = Counter(comm=world)
    most = 0
    for _ in range(ROUNDS // 2):
        with slots:
            now = inside.next() + 1
            most = max(most, now)
            pause()
            inside.next(-1)
    world.Barrier()
    assert max(world.allgather(most)) <= 2
    assert inside.next(0) == 0
    try:
        slots.release()
    except ValueError as error:
        assert "released too many times" in str(error)
    else:
        raise AssertionError("a bounded semaphore took a release beyond its start value")
    world.Barrier()
    empty = Semaphore(0, comm=world)
    assert empty.acquire(blocking=False) is False
    world.Barrier()
    for obj in (slots, inside, empty):
        obj.free()


def sequential():
    order = Counter(comm=world)
    for round_ in range(3):
        with Sequential(world):
            turn = next(order)
        assert world.allgather(turn) == [round_ * size + r for r in range(size)]
    order.free()


random.seed(rank)
for check in (counter, mutex, mutex_try, condition, condition_predicate, semaphore, sequential):
    judge(check.__name__, check)
