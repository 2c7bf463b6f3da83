"""Calibrate coll/tuned's decision rules: every algorithm of each operation, forced, timed.

    ompy run -n 4 --oversubscribe python packages/components/coll-tuned/benchmarks/calibrate.py
    ompy run -n 8 --oversubscribe python .../calibrate.py --ops allreduce,bcast --reps 40

For each operation and message size, one repetition runs every algorithm once, in an order
that rotates from repetition to repetition, so load from other processes on the machine hits
every algorithm alike; each call is preceded by a barrier and timed on every rank, the
slowest rank's time counts, and the table gives the median over the repetitions (µs) and the
fastest algorithm.  ``auto`` is timed too: it shows what the current rules pick and cost.
Sizes are bytes of what the rules measure (:data:`ompy.mca.coll.tuned.decision.MEASURE`).

The algorithms run through a :class:`~ompy.mca.coll.tuned.TunedCollModule` of the script's own
on COMM_WORLD (``algorithm=`` per call), whatever components serve COMM_WORLD otherwise.
Numbers, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ompy import MPI
from ompy.mca.coll.tuned import ALGORITHMS, TunedCollModule
from ompy.mca.coll.tuned.decision import decide
from ompy.ompi.datatype.buffer import VectorBufferSpec, parse_buffer

SIZES = [8, 1024, 16 * 1024, 128 * 1024, 1 << 20]
#: Operations whose rules read no message size: measured at a few block sizes all the same.
SIZELESS = {"barrier": [0], "gatherv": [8, 16 * 1024], "scatterv": [8, 16 * 1024]}
SIZELESS |= {"alltoallv": [8, 16 * 1024], "alltoallw": [8, 16 * 1024]}
DEFAULT_OPS = (
    "barrier,bcast,reduce,allreduce,allgather,alltoall,alltoallv,alltoallw,gather,gatherv,"
    "scatter,scatterv,reduce_scatter_block,scan"
)


def blocks(array: np.ndarray, size: int) -> VectorBufferSpec:
    spec = parse_buffer(array, readonly=False)
    each = spec.count // size
    return VectorBufferSpec(
        spec.buffer, (each,) * size, tuple(i * each for i in range(size)), spec.datatype
    )


def setup(operation: str, nbytes: int, c: Any, module: TunedCollModule) -> Callable[[str], None]:
    """A function running ``operation`` once with the named algorithm, on ``nbytes`` bytes."""
    size, rank = c.size, c.rank
    n = max(1, nbytes // 8)
    mine = np.full(n, rank + 1.0)
    out = np.zeros(n)
    if operation == "barrier":
        return lambda name: module.barrier(c, algorithm=name)
    if operation == "bcast":
        return lambda name: module.bcast(c, parse_buffer(out, readonly=False), 0, algorithm=name)
    if operation in ("reduce", "allreduce", "scan"):
        send, recv = parse_buffer(mine), parse_buffer(out, readonly=False)
        if operation == "reduce":
            return lambda name: module.reduce(c, send, recv, MPI.SUM, 0, algorithm=name)
        function = getattr(module, operation)
        return lambda name: function(c, send, recv, MPI.SUM, algorithm=name)
    if operation == "reduce_scatter_block":
        each = max(1, n // size)
        send = parse_buffer(np.ones(each * size))
        recv = parse_buffer(np.zeros(each), readonly=False)
        return lambda name: module.reduce_scatter_block(c, send, recv, MPI.SUM, algorithm=name)
    whole = np.zeros(n * size)
    if operation in ("allgather", "gather", "gatherv"):
        send, recv = parse_buffer(mine), blocks(whole, size)
        if operation == "allgather":
            return lambda name: module.allgather(c, send, recv, algorithm=name)
        function = getattr(module, operation)
        return lambda name: function(c, send, recv if rank == 0 else None, 0, algorithm=name)
    if operation in ("scatter", "scatterv"):
        send, recv = blocks(np.ones(n * size), size), parse_buffer(out, readonly=False)
        function = getattr(module, operation)
        return lambda name: function(c, send if rank == 0 else None, recv, 0, algorithm=name)
    if operation in ("alltoall", "alltoallv"):
        send, recv = blocks(np.ones(n * size), size), blocks(whole, size)
        function = getattr(module, operation)
        return lambda name: function(c, send, recv, algorithm=name)
    if operation == "alltoallw":
        sends = tuple(parse_buffer(np.ones(n)) for _ in range(size))
        recvs = tuple(parse_buffer(np.zeros(n), readonly=False) for _ in range(size))
        return lambda name: module.alltoallw(c, sends, recvs, algorithm=name)
    raise SystemExit(f"calibrate: no set-up for the operation {operation!r}")


def measure(comm: Any, operation: str, nbytes: int, reps: int, warmup: int) -> dict[str, float]:
    """Median slowest-rank time (µs) of each algorithm of ``operation`` on ``nbytes``."""
    c = comm._c
    module = TunedCollModule()
    run = setup(operation, nbytes, c, module)
    names = list(ALGORITHMS[operation])
    times = {name: [] for name in names}
    for rep in range(warmup + reps):
        shift = rep % len(names)
        for name in names[shift:] + names[:shift]:
            comm.Barrier()
            start = time.perf_counter()
            run(name)
            elapsed = time.perf_counter() - start
            if rep >= warmup:
                times[name].append(elapsed)
    slowest = {}
    for name in names:
        everyone = comm.gather(times[name], root=0)
        if everyone is not None:
            worst = np.max(np.array(everyone), axis=0)
            slowest[name] = statistics.median(worst) * 1e6
    return slowest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default=DEFAULT_OPS, help="comma-separated operations")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="bytes, comma-separated")
    parser.add_argument("--reps", type=int, default=25, help="timed repetitions per algorithm")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    size, rank = comm.Get_size(), comm.Get_rank()
    sizes = [int(s) for s in args.sizes.split(",")]
    if rank == 0:
        print(f"# coll/tuned calibration: {size} ranks, median of {args.reps} interleaved reps, µs")
        print("| op | p | bytes | algorithms (median µs) | best | auto picks (µs) |")
        print("|---|---|---|---|---|---|")
    for operation in args.ops.split(","):
        if operation not in ALGORITHMS:
            raise SystemExit(f"calibrate: {operation!r} is not an operation of coll/tuned")
        for nbytes in SIZELESS.get(operation, sizes):
            reps = args.reps if nbytes <= 128 * 1024 else max(5, args.reps // 3)
            result = measure(comm, operation, nbytes, reps, warmup=2)
            if rank == 0:
                forced = {name: t for name, t in result.items() if name != "auto"}
                best = min(forced, key=forced.get)
                cells = ", ".join(f"{name} {t:.0f}" for name, t in forced.items())
                picked = decide(operation, "auto", size, nbytes, True)
                print(
                    f"| {operation} | {size} | {nbytes} | {cells} | {best} | "
                    f"{picked} {result['auto']:.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
