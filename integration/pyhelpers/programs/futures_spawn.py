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
- ``no_orphans``: once shut down, every worker process has exited.
"""

import json
import os
import sys
import time

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
    second.shutdown(wait=True)
    finished = [f.result() for f in futures if not f.cancelled()]
    report("shutdown", refused and cancelled >= 10 and finished == list(range(len(finished))))

    report("no_orphans", all(gone(pid) for pid in pids))
    sys.stdout.flush()
