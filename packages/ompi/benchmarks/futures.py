"""Throughput of ``MPIPoolExecutor.map`` over empty tasks, with spawned workers.

    ompy run -n 1 --host localhost:5 python packages/ompi/benchmarks/futures.py
    mpirun -n 1 --host localhost:5 python packages/ompi/benchmarks/futures.py --mpi mpi4py

The parent (one rank) makes an ``MPIPoolExecutor(max_workers=--workers)`` of ``ompy.futures``
or ``mpi4py.futures``, waits for its workers (``bootup``), then maps a function of this script
that returns its argument over ``--tasks`` integers, once per ``--chunksizes`` value: with
chunksize 1 every task is one call of the executor (one message each for mpi4py.futures;
ompy.futures carries short calls in batches), the executor's own cost per call; larger chunks
show the cost per task when the program batches itself.  Each map is timed ``--iters`` times after a
warm-up; ``wall_s`` is the median wall time of one map, ``tasks_per_s`` the tasks over it.  The
results are checked (every argument back, in order).  Output: ``# key: value`` lines, then one
CSV table (``sidebyside.py`` reads it; ``compare.sh futures`` interleaves ompy and the peer).
"""

from __future__ import annotations

import importlib
import statistics
import sys
import time
from typing import Any

import benchlib


def echo(value: int) -> int:
    """The empty task: what the executor costs, with nothing to compute."""
    return value


def run_map(executor: Any, tasks: int, chunksize: int) -> float:
    """The wall time of one ``map`` of :func:`echo` over ``range(tasks)``, results checked."""
    start = time.perf_counter()
    results = list(executor.map(echo, range(tasks), chunksize=chunksize))
    wall = time.perf_counter() - start
    if results != list(range(tasks)):
        raise SystemExit("futures.py: map returned wrong results")
    return wall


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0], iters=3, warmup=1)
    parser.add_argument("--workers", type=int, default=4, help="workers to spawn")
    parser.add_argument("--tasks", type=int, default=10000, help="tasks per map")
    parser.add_argument("--chunksizes", default="1,100", help="comma-separated")
    args = parser.parse_args()

    mpi = benchlib.load_mpi(args.mpi)
    futures = importlib.import_module(f"{args.mpi}.futures")
    rows = []
    boot_start = time.perf_counter()
    with futures.MPIPoolExecutor(max_workers=args.workers) as executor:
        executor.bootup(wait=True)
        boot = time.perf_counter() - boot_start
        for chunksize in (int(size) for size in args.chunksizes.split(",")):
            for _ in range(args.warmup):
                run_map(executor, args.tasks, chunksize)
            walls = [run_map(executor, args.tasks, chunksize) for _ in range(args.iters)]
            rows.append((chunksize, walls))
    benchlib.header(
        "futures",
        mpi,
        args.mpi,
        f"workers: {args.workers} spawned; tasks per map: {args.tasks}; iters: {args.iters}",
        f"bootup: {boot:.3f} s",
    )
    print("impl,transport,workers,tasks,chunksize,iters,wall_s,tasks_per_s")
    for chunksize, walls in rows:
        wall = statistics.median(walls)
        print(
            f"{args.mpi},{args.label},{args.workers},{args.tasks},{chunksize},{args.iters},"
            f"{wall:.4f},{args.tasks / wall:.1f}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
