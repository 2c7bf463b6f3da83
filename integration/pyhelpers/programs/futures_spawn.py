"""``MPIPoolExecutor`` with spawned workers, from a one-rank job (``ompy run -n 1 --host
localhost:5``: the universe has room for four workers).

Checks, each printed as one JSON line ``{"check": name, "ok": value}``:

- ``workers``: the executor spawned the universe's remaining four slots as workers, each a
  process of its own that is not the program;
- ``map10k``: 10,000 small calls give their results in order (and unordered, and in chunks);
- ``arrays``: four 32 MiB numpy results arrive intact;
- ``lambda``/``local_function``: a lambda and a function defined inside a function (neither
  picklable by pickle) run on the workers;
- ``error``: a call that raises gives the caller its exception, with the worker's traceback as
  the cause, and the executor goes on working;
- ``shutdown``: after ``shutdown()`` the executor refuses new calls; ``shutdown(wait=False,
  cancel_futures=True)`` of a second executor cancels what had not started;
- ``main_class``: an instance of a class of this script, made on a worker (where the script
  runs as ``__worker__``), arrives here as an instance of this script's class;
- ``run_name``: on the workers this script runs under the name ``__worker__``;
- ``bad_unpickle``: an argument whose unpickling fails on the worker fails its call with that
  error and the worker's traceback as the cause; the next call runs;
- ``cancel_wait``: calls cancelled by ``shutdown(cancel_futures=True)`` count as done for
  ``concurrent.futures.wait`` at once;
- ``max_workers_environ``: ``OMPY_FUTURES_MAX_WORKERS`` sets how many workers are spawned;
- ``use_pkl5_environ``: ``OMPY_FUTURES_USE_PKL5`` yes/no values work, and any other value
  warns (``RuntimeWarning`` naming it) and counts as no;
- ``no_orphans``: once shut down, every worker process has exited.
"""

import json
import os
import sys
import time
import warnings
from concurrent.futures import wait

import numpy as np

from ompy.futures import MPIPoolExecutor

BIG = 32 << 20  # bytes of each large result


def report(check, ok):
    print(json.dumps({"check": check, "ok": ok}), flush=True)


def square(x):
    return x * x


def big(n):
    return np.full(BIG // 8, float(n))


def whoami(_):
    time.sleep(0.05)  # keep each worker busy so that the calls spread over all of them
    return os.getpid()


def slow(x):
    time.sleep(0.2)
    return x


def divide(x):
    return 1 / x


def make_adder(offset):
    def add(x):
        return x + offset

    return add


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


def run_name():
    return __name__


class BadUnpickle:
    def __getstate__(self):
        return (None,)

    def __setstate__(self, state):
        _ = 1 / 0


def echo(obj):
    return obj


def environ_checks():
    os.environ["OMPY_FUTURES_MAX_WORKERS"] = "1"
    try:
        with MPIPoolExecutor() as one:
            report("max_workers_environ", one.num_workers == 1)
    finally:
        del os.environ["OMPY_FUTURES_MAX_WORKERS"]
    ok = True
    try:
        for value in ("false", "true"):
            os.environ["OMPY_FUTURES_USE_PKL5"] = value
            with MPIPoolExecutor(max_workers=1) as pool:
                ok = ok and pool.submit(square, 3).result() == 9
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            os.environ["OMPY_FUTURES_USE_PKL5"] = "foobar"
            with MPIPoolExecutor(max_workers=1) as pool:
                ok = ok and pool.submit(square, 4).result() == 16
        told = [w for w in caught if issubclass(w.category, RuntimeWarning)]
        ok = ok and len(told) == 1 and "foobar" in str(told[0].message)
    finally:
        del os.environ["OMPY_FUTURES_USE_PKL5"]
    report("use_pkl5_environ", ok)


def gone(pid, within=30.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


if __name__ == "__main__":
    pids = set()
    executor = MPIPoolExecutor()
    with executor:
        pids.update(executor.map(whoami, range(40)))
        report("workers", executor.num_workers == 4 and len(pids) == 4 and os.getpid() not in pids)

        n = 10_000
        expected = [x * x for x in range(n)]
        report("map10k", list(executor.map(square, range(n))) == expected)
        report(
            "map10k_unordered", sorted(executor.map(square, range(n), unordered=True)) == expected
        )
        report("map10k_chunks", list(executor.map(square, range(n), chunksize=250)) == expected)

        arrays = list(executor.map(big, range(4)))
        report(
            "arrays",
            all(a.nbytes == BIG and (a == k).all() for k, a in enumerate(arrays)),
        )
        del arrays

        report("lambda", executor.submit(lambda x: x * 3, 14).result() == 42)
        report("local_function", list(executor.map(make_adder(5), [1, 2])) == [6, 7])

        future = executor.submit(divide, 0)
        error = future.exception()
        report(
            "error",
            isinstance(error, ZeroDivisionError)
            and "division by zero" in str(error)
            and "divide" in str(error.__cause__)
            and executor.submit(divide, 4).result() == 0.25,
        )

        point = executor.submit(Point, 3, 4).result()
        report("main_class", type(point) is Point and (point.x, point.y) == (3, 4))
        report("run_name", executor.submit(run_name).result() == "__worker__")

        error = executor.submit(echo, BadUnpickle()).exception()
        report(
            "bad_unpickle",
            isinstance(error, ZeroDivisionError)
            and "__setstate__" in str(error.__cause__)
            and executor.submit(echo, 5).result() == 5,
        )
    try:
        executor.submit(square, 2)
        refused = False
    except RuntimeError:
        refused = True

    second = MPIPoolExecutor(max_workers=1)
    futures = [second.submit(slow, k) for k in range(20)]
    futures[0].result()  # the worker is up and busy
    second.shutdown(wait=False, cancel_futures=True)
    cancelled = sum(f.cancelled() for f in futures)
    _, not_done = wait([f for f in futures if f.cancelled()], timeout=5)
    report("cancel_wait", cancelled > 0 and not not_done)
    second.shutdown(wait=True)
    finished = [f.result() for f in futures if not f.cancelled()]
    report("shutdown", refused and cancelled >= 10 and finished == list(range(len(finished))))

    environ_checks()
    report("no_orphans", all(gone(pid) for pid in pids))
    sys.stdout.flush()
