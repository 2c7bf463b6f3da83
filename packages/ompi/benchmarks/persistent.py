"""A persistent allreduce (``Allreduce_init`` + ``Start``) against the plain ``Allreduce``.

    ompy run -n 2 python packages/ompi/benchmarks/persistent.py
    ompy run -n 2 --mca btl self,tcp python packages/ompi/benchmarks/persistent.py --label tcp
    mpirun -n 2 python packages/ompi/benchmarks/persistent.py --mpi mpi4py          # the peer

Issue 15's measure: one double summed over the ranks, by

- ``allreduce``: ``comm.Allreduce(x, y)``;
- ``allreduce_init``: ``request.Start(); request.Wait()`` of one ``Allreduce_init(x, y)``
  made before the loop (the set-up is paid once; each start only moves data);
- ``iallreduce``: ``comm.Iallreduce(x, y).Wait()`` (a nonblocking call made every time).

Each call is timed alone, after a barrier, following a warm-up; ``lat_us`` is the median and
``lat_min_us`` the fastest call on rank 0, and the result of the last call is checked.  Output,
on rank 0: ``# key: value`` lines, then one CSV table (read by ``sidebyside.py``;
``compare.sh persistent`` interleaves ompy and the peer).
"""

from __future__ import annotations

import statistics
import sys

import benchlib
import numpy as np


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0], iters=1000, warmup=100)
    args = parser.parse_args()

    mpi = benchlib.load_mpi(args.mpi)
    comm = mpi.COMM_WORLD
    size = comm.Get_size()
    mine = np.array([float(comm.Get_rank() + 1)])
    total = np.zeros(1)
    request = comm.Allreduce_init(mine, total, mpi.SUM)

    def persistent() -> None:
        request.Start()
        request.Wait()

    cases = (
        ("allreduce", lambda: comm.Allreduce(mine, total, mpi.SUM)),
        ("allreduce_init", persistent),
        ("iallreduce", lambda: comm.Iallreduce(mine, total, mpi.SUM).Wait()),
    )
    rows = []
    for name, call in cases:
        total[0] = 0
        times = benchlib.timed(comm, call, args.iters, args.warmup)
        if total[0] != size * (size + 1) / 2:
            raise SystemExit(f"persistent.py: {name} gave {total[0]}")
        rows.append((name, times))
    request.Free()
    if comm.Get_rank() == 0:
        benchlib.header("persistent", mpi, args.mpi, f"ranks: {size}; iters: {args.iters}")
        print("impl,transport,call,bytes,iters,lat_us,lat_min_us")
        for name, times in rows:
            print(
                f"{args.mpi},{args.label},{name},8,{args.iters},"
                f"{statistics.median(times) * 1e6:.2f},{min(times) * 1e6:.2f}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
