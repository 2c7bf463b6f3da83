"""Two-rank ping-pong of 16 MiB of doubles laid out three ways: contiguous, vector, subarray.

    ompy run -n 2 python packages/ompi/benchmarks/derived.py
    ompy run -n 2 --mca btl self,tcp python packages/ompi/benchmarks/derived.py --label tcp
    mpirun -n 2 python packages/ompi/benchmarks/derived.py --mpi mpi4py       # the peer

The same message (``--mib`` MiB of float64, 16 by default) travels as

- ``contiguous``: one row, ``[array, MPI.DOUBLE]`` (the baseline: no datatype engine);
- ``vector``: every other element of an array twice as large,
  ``MPI.DOUBLE.Create_vector(count, 1, 2)``: one-element blocks with a gap between them, the
  worst case for a convertor that copies block by block;
- ``subarray``: a column block of a 2-D array, ``MPI.DOUBLE.Create_subarray`` of the left half
  of every row of a C-order matrix (rows of 4096 doubles, blocks of 2048).

Both ranks use the same datatype for sending and receiving, so each message is packed on one
side and unpacked on the other; the data is checked after the timed loop.  Every library gets
exactly the same ``Datatype`` calls, so ``--mpi ompy`` and ``--mpi mpi4py`` (or ``$BENCH_MPI``)
measure the same work.  Every round trip is timed after a warm-up; ``lat_us`` is half the
median round trip, ``bw_GBps`` the message's data bytes over it (1 GB = 1e9 B); ``lat_min_us``
and ``bw_best_GBps`` are the same of the fastest round trip, steadier on a loaded machine.

Output, on rank 0: ``# key: value`` metadata lines, then one CSV table.  Numbers, not a test:
compare runs made in the same minutes (``compare.sh derived`` interleaves the two libraries).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import benchlib
import numpy as np

LAYOUTS = ("contiguous", "vector", "subarray")
#: Doubles in one row of the subarray case's matrix; the column block is the left half.
ROW = 4096


class Layout:
    """One way of laying out ``count`` doubles: the array, its datatype, and a data check."""

    def __init__(self, mpi: Any, name: str, count: int) -> None:
        self.name = name
        self.count = count
        self.datatype: Any = None  # a derived type to free at the end, if any
        if name == "contiguous":
            self.array = np.zeros(count)
            self.message: list[Any] = [self.array, mpi.DOUBLE]
            self.data: Callable[[], np.ndarray] = lambda: self.array
        elif name == "vector":
            self.array = np.zeros(2 * count)
            self.datatype = mpi.DOUBLE.Create_vector(count, 1, 2).Commit()
            self.message = [self.array, 1, self.datatype]
            self.data = lambda: self.array[::2]
        elif name == "subarray":
            if count % (ROW // 2):
                raise SystemExit(f"derived.py: the subarray case needs a multiple of {ROW // 2}")
            rows = count // (ROW // 2)
            self.array = np.zeros((rows, ROW))
            self.datatype = mpi.DOUBLE.Create_subarray(
                [rows, ROW], [rows, ROW // 2], [0, 0], order=mpi.ORDER_C
            ).Commit()
            self.message = [self.array, 1, self.datatype]
            self.data = lambda: self.array[:, : ROW // 2]
        else:
            raise SystemExit(f"derived.py: unknown layout {name!r} (known: {', '.join(LAYOUTS)})")

    def fill(self, value: float) -> None:
        self.array[...] = -1.0  # the gaps, which must never travel
        self.data()[...] = value

    def check(self, value: float) -> None:
        data = self.data()
        if not (data == value).all():
            raise SystemExit(f"derived.py: {self.name}: wrong data received")
        if self.name != "contiguous" and not (self.array[self.array != value] == -1.0).all():
            raise SystemExit(f"derived.py: {self.name}: a gap was overwritten")

    def free(self) -> None:
        if self.datatype is not None:
            self.datatype.Free()


def pingpong(comm: Any, rank: int, layout: Layout, iters: int, warmup: int) -> list[float]:
    """Round-trip times of ``iters`` ping-pongs after ``warmup`` untimed ones (rank 0's)."""
    message = layout.message
    times = []
    layout.fill(float(rank + 1))
    comm.Barrier()
    for i in range(warmup + iters):
        if rank == 0:
            start = time.perf_counter()
            comm.Send(message, 1, 11)
            comm.Recv(message, 1, 12)
            if i >= warmup:
                times.append(time.perf_counter() - start)
        elif rank == 1:
            comm.Recv(message, 0, 11)
            comm.Send(message, 0, 12)
    if rank <= 1:
        layout.check(1.0)  # rank 0's data went there and back
    comm.Barrier()
    return times


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0], iters=20, warmup=3)
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--mib", type=int, default=16, help="MiB of doubles per message")
    args = parser.parse_args()

    mpi = benchlib.load_mpi(args.mpi)
    comm = mpi.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        raise SystemExit("derived.py needs 2 ranks")
    count = args.mib * (1 << 20) // 8
    rows = []
    for name in args.layouts.split(","):
        layout = Layout(mpi, name, count)
        times = pingpong(comm, rank, layout, args.iters, args.warmup)
        layout.free()
        if rank == 0:
            half = statistics.median(times) / 2
            best = min(times) / 2
            rows.append((name, half, best))
    if rank == 0:
        benchlib.header(
            "derived",
            mpi,
            args.mpi,
            f"nprocs: {size}",
            f"message: {count} doubles ({count * 8} bytes); iters: {args.iters}",
        )
        print("impl,transport,layout,size_bytes,iters,lat_us,lat_min_us,bw_GBps,bw_best_GBps")
        nbytes = count * 8
        for name, half, best in rows:
            print(
                f"{args.mpi},{args.label},{name},{nbytes},{args.iters},{half * 1e6:.1f},"
                f"{best * 1e6:.1f},{nbytes / half / 1e9:.4f},{nbytes / best / 1e9:.4f}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
