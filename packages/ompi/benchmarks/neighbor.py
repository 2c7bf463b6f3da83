"""Neighbor collectives on a 2x2 periodic grid (4 ranks): ``Neighbor_alltoall`` and a halo.

    ompy run -n 4 python packages/ompi/benchmarks/neighbor.py
    ompy run -n 4 --mca btl self,tcp python packages/ompi/benchmarks/neighbor.py --label tcp
    mpirun -n 4 python packages/ompi/benchmarks/neighbor.py --mpi mpi4py          # the peer

Every rank of a ``Create_cart([2, 2], [True, True])`` grid has four neighbours (two per
dimension, here the same process twice: the duplicate-edge case of MPI's matching rule), and
each call moves one block per edge:

- ``alltoall``: ``Neighbor_alltoall`` of 8 B and 64 KiB blocks (bytes, ``[buf, MPI.BYTE]``);
- ``ialltoall``: the same started with ``Ineighbor_alltoall`` and waited for;
- ``halo``: ``Neighbor_alltoallw`` of the four faces of a 258 x 258 field of doubles with one
  ghost layer (subarray datatypes, rows of 2 KiB contiguous, columns strided).

Every call is timed after a warm-up, with a barrier before each so the ranks start together;
``lat_us`` is the median and ``lat_min_us`` the fastest call on rank 0.  The received data is
checked after the timed loop; on this grid both neighbours of a dimension are one process, so
the metadata says which block matching the library used (MPI 4.1's, or the list order of
implementations that predate the erratum).  Output, on rank 0: ``# key: value`` lines, then
one CSV table (read by ``sidebyside.py``; ``compare.sh neighbor`` interleaves ompy and the
peer).
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import benchlib
import numpy as np


def alltoall_case(mpi: Any, grid: Any, block: int, nonblocking: bool) -> tuple[Any, Any]:
    """The call, and a check of its result, for blocks of ``block`` bytes."""
    rank = grid.Get_rank()
    send = np.empty((4, block), dtype=np.uint8)
    for edge in range(4):
        send[edge] = (rank * 4 + edge) % 251
    recv = np.zeros((4, block), dtype=np.uint8)
    smsg, rmsg = [send, mpi.BYTE], [recv, mpi.BYTE]
    if nonblocking:

        def call() -> None:
            grid.Ineighbor_alltoall(smsg, rmsg).Wait()
    else:

        def call() -> None:
            grid.Neighbor_alltoall(smsg, rmsg)

    def check() -> str:
        """Which matching of duplicate edges the library used (each block must be from its
        source): MPI 4.1's (the block sent the other way, ``edge ^ 1``) or list order."""
        found = set()
        for edge, source in enumerate(grid.inedges):
            if (recv[edge] == (source * 4 + (edge ^ 1)) % 251).all():
                found.add("mpi-4.1")
            elif (recv[edge] == (source * 4 + edge) % 251).all():
                found.add("list-order")
            else:
                raise SystemExit(f"neighbor.py: block {edge} is not from rank {source}")
        return "+".join(sorted(found))

    return call, check


def halo_case(mpi: Any, grid: Any, n: int) -> tuple[Any, Any, list[Any]]:
    """Neighbor_alltoallw of the four faces of an n x n field with one ghost layer."""
    sizes = [n + 2, n + 2]
    field = np.full(sizes, float(grid.Get_rank()))

    def face(subsizes: list[int], starts: list[int]) -> Any:
        return mpi.DOUBLE.Create_subarray(sizes, subsizes, starts).Commit()

    send = [face([1, n], [1, 1]), face([1, n], [n, 1]), face([n, 1], [1, 1]), face([n, 1], [1, n])]
    recv = [
        face([1, n], [0, 1]),
        face([1, n], [n + 1, 1]),
        face([n, 1], [1, 0]),
        face([n, 1], [1, n + 1]),
    ]
    ones, zeros = [1] * 4, [0] * 4
    smsg, rmsg = [field, (ones, zeros), send], [field, (ones, zeros), recv]

    def call() -> None:
        grid.Neighbor_alltoallw(smsg, rmsg)

    def check() -> str:
        sources = grid.inedges
        ghosts = [field[0, 1:-1], field[-1, 1:-1], field[1:-1, 0], field[1:-1, -1]]
        for edge, ghost in enumerate(ghosts):
            if not (ghost == float(sources[edge])).all():
                raise SystemExit(f"neighbor.py: wrong halo face {edge}")
        return "faces"

    return call, check, send + recv


def main() -> None:
    parser = benchlib.parser(__doc__.splitlines()[0], iters=200, warmup=20)
    args = parser.parse_args()

    mpi = benchlib.load_mpi(args.mpi)
    world = mpi.COMM_WORLD
    if world.Get_size() != 4:
        raise SystemExit("neighbor.py needs 4 ranks (a 2x2 grid)")
    grid = world.Create_cart([2, 2], [True, True])
    rows = []
    matchings = set()
    for name, block in (
        ("alltoall", 8),
        ("alltoall", 65536),
        ("ialltoall", 8),
        ("ialltoall", 65536),
    ):
        call, check = alltoall_case(mpi, grid, block, name == "ialltoall")
        times = benchlib.timed(grid, call, args.iters, args.warmup)
        matchings.add(f"{name} {check()}")
        rows.append((name, block, times))
    call, check, datatypes = halo_case(mpi, grid, 256)
    times = benchlib.timed(grid, call, args.iters, args.warmup)
    check()
    rows.append(("halo-alltoallw", 256 * 8, times))
    for datatype in datatypes:
        datatype.Free()
    grid.Free()
    if world.Get_rank() == 0:
        benchlib.header(
            "neighbor",
            mpi,
            args.mpi,
            f"grid: 2x2 periodic, 4 ranks; iters: {args.iters}",
            f"duplicate-edge matching: {', '.join(sorted(matchings))}",
        )
        print("impl,transport,call,block_bytes,iters,lat_us,lat_min_us")
        for name, block, times in rows:
            print(
                f"{args.mpi},{args.label},{name},{block},{args.iters},"
                f"{statistics.median(times) * 1e6:.1f},{min(times) * 1e6:.1f}"
            )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
