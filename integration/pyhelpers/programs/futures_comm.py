"""``MPICommExecutor`` across ranks: the root maps calls onto the other ranks.

Checks, each printed by the root as one JSON line ``{"check": name, "ok": value}``:

- ``map10k``: 10,000 small calls in order, then unordered and in chunks;
- ``arrays``: a few large numpy results (8 MiB each) arrive intact;
- ``lambda``: a lambda and a function defined inside a function run on the workers;
- ``error``: a call that raises gives its exception, with the worker's traceback as cause;
- ``batch_failures``: among thousands of short calls (which travel in batches), the calls that
  raise, return what cannot be pickled (or whose pickling code raises) or take an argument that
  cannot be pickled or unpickled fail alone, each with its own error, and every other call
  gets its result;
- ``workers``: ``get_comm_workers()`` in a call is the workers' intracommunicator;
- ``initializer``: the initializer ran on every worker before its calls;
- ``pkl5``: an executor with ``use_pkl5=True`` runs its calls and lets its workers go;
- ``broken``: a failing initializer breaks the executor (and the workers still leave);
- ``subcomm``: an executor on a sub-communicator whose root is its last rank.
"""

import json
import os

import numpy as np

from ompy import MPI
from ompy.futures import BrokenExecutor, MPICommExecutor, get_comm_workers

world = MPI.COMM_WORLD
INITIALIZED = []


def report(check, ok):
    print(json.dumps({"check": check, "ok": ok}), flush=True)


def square(x):
    return x * x


def array(n):
    return np.full(1 << 20, float(n))


def workers_view(_):
    comm = get_comm_workers()
    return comm.Get_size(), world.Get_rank()


def initialize(value):
    INITIALIZED.append(value)


def initialized(_):
    return INITIALIZED


def fail_to_initialize():
    raise OSError("no scratch space")


def half_of_even(x):
    if x % 97 == 13:
        raise ValueError(f"odd one {x}")
    return x // 2


class Unpicklable:
    def __reduce__(self):
        raise TypeError("cannot travel")


def unpicklable_at(x):
    return Unpicklable() if x == 500 else x


class BadState:
    """Its own pickling code fails: the call's error, as with mpi4py.futures."""

    def __getstate__(self):
        return 1 / 0


def rebuild_fails():
    raise ZeroDivisionError("cannot be rebuilt")


class BadUnpickle:
    """Pickles, but unpickling it raises (a worker cannot receive the batch that holds it)."""

    def __reduce__(self):
        return rebuild_fails, ()


def same(x):
    return x


def bad_state_at(x):
    return BadState() if x == 300 else x


def fails_alone(futures, bad, error_type):
    """Every call but ``bad`` returned its argument; ``bad`` failed with ``error_type``."""
    for x, future in enumerate(futures):
        error = future.exception(timeout=120)
        if x == bad:
            if not isinstance(error, error_type):
                return False
        elif error is not None or future.result() != x:
            return False
    return True


def batch_failures():
    futures = [executor.submit(half_of_even, x) for x in range(3000)]
    for x, future in enumerate(futures):
        error = future.exception(timeout=120)
        if x % 97 == 13:
            if not (isinstance(error, ValueError) and str(error) == f"odd one {x}"):
                return False
        elif error is not None or future.result() != x // 2:
            return False
    # On one process the calls run on threads: their results are not pickled.
    pickled = world.Get_size() > 1
    futures = [executor.submit(unpicklable_at, x) for x in range(1000)]
    for x, future in enumerate(futures):
        error = future.exception(timeout=120)
        if (x == 500 and pickled) != (error is not None) or (x != 500 and future.result() != x):
            return False
    futures = [executor.submit(square, Unpicklable() if x == 700 else x) for x in range(1500)]
    for x, future in enumerate(futures):
        error = future.exception(timeout=120)
        if (x == 700) != (error is not None) or (x != 700 and future.result() != x * x):
            return False
    if not pickled:
        return True
    return fails_alone(
        [executor.submit(bad_state_at, x) for x in range(1000)], 300, ZeroDivisionError
    ) and fails_alone(
        [executor.submit(same, BadUnpickle() if x == 400 else x) for x in range(1000)],
        400,
        ZeroDivisionError,
    )


def make_adder(offset):
    def add(x):
        return x + offset

    return add


with MPICommExecutor(world, root=0) as executor:
    if executor is not None:
        n = 10_000
        report("map10k", list(executor.map(square, range(n))) == [x * x for x in range(n)])
        unordered = sorted(executor.map(square, range(n), unordered=True))
        report("map10k_unordered", unordered == [x * x for x in range(n)])
        report(
            "map10k_chunks",
            list(executor.map(square, range(n), chunksize=97)) == [x * x for x in range(n)],
        )
        arrays = list(executor.map(array, range(4)))
        report(
            "arrays", all(a.shape == (1 << 20,) and (a == k).all() for k, a in enumerate(arrays))
        )
        report("lambda", executor.submit(lambda x: x * 3, 14).result() == 42)
        report("local_function", list(executor.map(make_adder(5), [1, 2])) == [6, 7])
        future = executor.submit(os.path.join, 1, 2)
        try:
            future.result()
        except TypeError as error:
            cause = str(error.__cause__)
            # On one process the calls run on a thread here: no remote traceback then.
            remote = world.Get_size() == 1 or ("### Worker" in cause and "TypeError" in cause)
            report("error", remote)
        report("batch_failures", batch_failures())
        views = set(executor.map(workers_view, range(50)))
        workers_size = max(world.Get_size() - 1, 1)  # one process: a thread, on COMM_SELF
        ranks = {rank for _, rank in views}
        sizes = {size for size, _ in views}
        report("workers", sizes == {workers_size} and (world.Get_size() == 1 or 0 not in ranks))
        report("num_workers", executor.num_workers == max(world.Get_size() - 1, 1))

with MPICommExecutor(world, root=0, initializer=initialize, initargs=("ready",)) as executor:
    if executor is not None:
        report(
            "initializer", all(seen == ["ready"] for seen in executor.map(initialized, range(20)))
        )

# Calls and replies through pkl5; the workers must still be told to stop (the job ends).
with MPICommExecutor(world, root=0, use_pkl5=True) as executor:
    if executor is not None:
        big = np.arange(1 << 18, dtype=np.float64)
        results = list(executor.map(square, [big, 3]))
        report("pkl5", (results[0] == big * big).all() and results[1] == 9)

with MPICommExecutor(world, root=0, initializer=fail_to_initialize) as executor:
    if executor is not None:
        try:
            executor.submit(square, 2).result(timeout=60)
        except BrokenExecutor as error:
            report("broken", "initializer failed" in str(error))
        else:
            report("broken", False)

# All ranks but the last (all of one rank) form a sub-communicator whose last rank is the root.
inside = world.Get_rank() < max(world.Get_size() - 1, 1)
sub = world.Split(0 if inside else 1, world.Get_rank())
if inside:
    with MPICommExecutor(sub, root=sub.Get_size() - 1) as executor:
        if executor is not None:
            total = sum(executor.map(square, range(100)))
            report("subcomm", total == sum(x * x for x in range(100)))
sub.Free()
world.Barrier()
