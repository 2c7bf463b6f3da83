"""A program for ``python -m ompy.futures``: its executors use the job's other ranks.

Run as ``ompy run -n N python -m ompy.futures futures_shared.py ARG``; prints JSON checks:

- ``argv``: the program sees its own argv, on rank 0 and in the workers;
- ``map``: calls of a function of this (main) script, which the workers import by path;
- ``two_executors``: two executors at once share the workers and each gets its own results;
- ``workers``: the workers' communicator has N-1 ranks (1 on a job of one rank: a thread);
- ``lambda``: a lambda travels by value;
- ``arrays``: large numpy results.
"""

import json
import sys

import numpy as np

from ompy import MPI
from ompy.futures import MPIPoolExecutor, get_comm_workers


def report(check, ok):
    print(json.dumps({"check": check, "ok": ok}), flush=True)


def cube(x):
    return x**3


def argv(_):
    return sys.argv[1:]


def workers(_):
    return get_comm_workers().Get_size()


def array(n):
    return np.arange(n, dtype=np.int64)


if __name__ == "__main__":
    size = MPI.COMM_WORLD.Get_size()
    with MPIPoolExecutor() as executor:
        report("argv", sys.argv[1:] == ["hello"] and executor.submit(argv, 0).result() == ["hello"])
        report("map", list(executor.map(cube, range(1000))) == [x**3 for x in range(1000)])
        with MPIPoolExecutor() as other:
            first = executor.map(cube, range(300))
            second = other.map(abs, range(-300, 0))
            report(
                "two_executors",
                list(first) == [x**3 for x in range(300)]
                and list(second) == list(range(300, 0, -1)),
            )
        report("workers", set(executor.map(workers, range(20))) == {max(size - 1, 1)})
        report("lambda", executor.submit(lambda: "by value").result() == "by value")
        sizes = [1 << 21, 3 << 20, 5]
        report(
            "arrays",
            all(
                (a == np.arange(n)).all()
                for n, a in zip(sizes, executor.map(array, sizes), strict=True)
            ),
        )
