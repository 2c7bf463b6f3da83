"""One-sided communication between two ranks: ``Put`` + ``Fence`` and ``Fetch_and_op`` + ``Flush``.

    ompy run -n 2 python packages/ompi/benchmarks/rma.py
    ompy run -n 2 --mca btl self,tcp python packages/ompi/benchmarks/rma.py --label tcp
    mpirun -n 2 python packages/ompi/benchmarks/rma.py --mpi mpi4py           # the peer

Both ranks allocate a window (``Win.Allocate``, or ``Win.Create`` over a numpy array with
``--flavor create``) as large as the largest message, and rank 0 is the origin, rank 1 the
target:

- ``put_fence``: in a fence epoch, rank 0 ``Put``s ``size`` bytes into rank 1's window and both
  ranks call ``Fence`` (the put is complete at the target when the fence returns), for each
  size of ``--sizes`` (8 B and 16 MiB by default: the latency and the bandwidth);
- ``fetch_and_op``: in one passive-target epoch (``Lock(1, LOCK_SHARED)``), rank 0 adds one to
  an 8-byte integer of rank 1's window with ``Fetch_and_op`` and waits for it with
  ``Flush(1)``; rank 1 waits in a barrier meanwhile (no target call, as in a real counter).

Each iteration is timed on rank 0 after a warm-up; ``lat_us`` is the median and
``lat_min_us`` the fastest, ``bw_GBps`` the size over the median (1 GB = 1e9 B).  The data is
checked after each case: the target's window holds the last put, the counter the number of
additions.  Output, on rank 0: ``# key: value`` lines, then one CSV table (``sidebyside.py``
reads it; ``compare.sh rma`` interleaves ompy and the peer).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import benchlib
import numpy as np

SIZES = "8,16777216"


def iterations(size: int, iters: int) -> int:
    """Fewer timed iterations for large messages, whose time varies less."""
    return iters if size <= 65536 else max(5, iters // 25)


def put_fence(
    mpi: Any, comm: Any, win: Any, memory: np.ndarray, *, size: int, iters: int, warmup: int
) -> list[float]:
    """Times of ``iters`` Put + Fence epochs of ``size`` bytes after ``warmup`` ones (rank 0)."""
    rank = comm.Get_rank()
    origin = np.full(size, 0, dtype=np.uint8)
    times = []
    win.Fence()
    for i in range(warmup + iters):
        origin[0] = origin[-1] = i % 251  # every epoch puts something new
        start = time.perf_counter()
        if rank == 0:
            win.Put([origin, mpi.BYTE], 1)
        win.Fence()
        if i >= warmup:
            times.append(time.perf_counter() - start)
    win.Fence()
    last = (warmup + iters - 1) % 251
    if rank == 1 and not (memory[0] == memory[size - 1] == last):
        raise SystemExit(f"rma.py: put_fence {size}: the target does not hold the last put")
    return times


def fetch_and_op(
    mpi: Any, comm: Any, win: Any, memory: np.ndarray, *, iters: int, warmup: int
) -> list[float]:
    """Times of ``iters`` Fetch_and_op + Flush on rank 1's counter after ``warmup`` ones."""
    rank = comm.Get_rank()
    counter = memory[:8].view(np.int64)
    win.Lock(rank)
    counter[0] = 0
    win.Unlock(rank)
    comm.Barrier()
    one = np.ones(1, dtype=np.int64)
    old = np.zeros(1, dtype=np.int64)
    times = []
    if rank == 0:
        win.Lock(1, mpi.LOCK_SHARED)
        for i in range(warmup + iters):
            start = time.perf_counter()
            win.Fetch_and_op([one, mpi.INT64_T], [old, mpi.INT64_T], 1, 0, mpi.SUM)
            win.Flush(1)
            if i >= warmup:
                times.append(time.perf_counter() - start)
            if old[0] != i:
                raise SystemExit(f"rma.py: fetch_and_op fetched {old[0]}, not {i}")
        win.Unlock(1)
    comm.Barrier()
    if rank == 1:
        win.Lock(1)
        total = int(counter[0])
        win.Unlock(1)
        if total != warmup + iters:
            raise SystemExit(f"rma.py: the counter is {total}, not {warmup + iters}")
    return times


def window(mpi: Any, comm: Any, flavor: str, nbytes: int) -> tuple[Any, np.ndarray]:
    """A window of ``nbytes`` on every rank, and this rank's memory as a numpy array."""
    if flavor == "allocate":
        win = mpi.Win.Allocate(nbytes, 1, comm=comm)
        return win, np.frombuffer(win.tomemory(), dtype=np.uint8)
    if flavor == "create":
        memory = np.zeros(nbytes, dtype=np.uint8)
        return mpi.Win.Create(memory, 1, comm=comm), memory
    raise SystemExit(f"rma.py: unknown flavor {flavor!r} (allocate or create)")


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0], iters=1000, warmup=50)
    parser.add_argument("--sizes", default=SIZES, help="bytes per put, comma-separated")
    parser.add_argument("--flavor", default="allocate", help="allocate or create")
    args = parser.parse_args()

    mpi = benchlib.load_mpi(args.mpi)
    comm = mpi.COMM_WORLD
    if comm.Get_size() != 2:
        raise SystemExit("rma.py needs 2 ranks")
    sizes = [int(size) for size in args.sizes.split(",")]
    win, memory = window(mpi, comm, args.flavor, max(*sizes, 8))
    rows = []
    for size in sizes:
        iters = iterations(size, args.iters)
        warmup = max(1, args.warmup * iters // args.iters)
        times = put_fence(mpi, comm, win, memory, size=size, iters=iters, warmup=warmup)
        rows.append(("put_fence", size, iters, times))
    times = fetch_and_op(mpi, comm, win, memory, iters=args.iters, warmup=args.warmup)
    rows.append(("fetch_and_op", 8, args.iters, times))
    win.Free()
    if comm.Get_rank() == 0:
        benchlib.header("rma", mpi, args.mpi, f"ranks: 2; window: Win.{args.flavor.capitalize()}")
        print("impl,transport,flavor,call,size_bytes,iters,lat_us,lat_min_us,bw_GBps")
        for name, size, iters, times in rows:
            median = statistics.median(times)
            bandwidth = f"{size / median / 1e9:.4f}" if name == "put_fence" else ""
            print(
                f"{args.mpi},{args.label},{args.flavor},{name},{size},{iters},"
                f"{median * 1e6:.2f},{min(times) * 1e6:.2f},{bandwidth}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
