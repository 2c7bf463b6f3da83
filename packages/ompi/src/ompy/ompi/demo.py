"""The first MPI program a newcomer runs: ``ompy run -n 4 python -m ompy.ompi.demo``.

Every rank passes a message around the ring (a pickled object, point-to-point), fills a numpy
array and sums it across the job (a buffer collective), and rank 0 prints what every rank received.
It checks its own results, so a wrong answer ends
the job with an error instead of a plausible-looking table.
"""

from __future__ import annotations

import socket

import numpy as np

from ompy import MPI

#: Elements of the array every rank contributes to the reduction.
LENGTH = 1_000_000


def main() -> None:
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size

    start = MPI.Wtime()
    token = comm.sendrecv(
        {"from": rank, "host": socket.gethostname()}, dest=right, sendtag=1, source=left, recvtag=1
    )
    if token["from"] != left:
        raise RuntimeError(f"rank {rank} expected the token of rank {left}, got {token}")

    mine = np.full(LENGTH, rank + 1, dtype=np.float64)
    total = np.empty_like(mine)
    comm.Allreduce(mine, total, op=MPI.SUM)
    expected = size * (size + 1) / 2
    if not np.all(total == expected):
        raise RuntimeError(f"rank {rank}: Allreduce gave {total[:3]}..., expected {expected}")
    elapsed = MPI.Wtime() - start

    lines = comm.gather(f"rank {rank}: got the token of rank {token['from']}", root=0)
    if rank == 0:
        assert lines is not None
        ranks = "1 rank" if size == 1 else f"{size} ranks"
        print(f"{ranks} on {MPI.Get_processor_name()}, {MPI.Get_library_version()}")
        print("\n".join(lines))
        print(
            f"Allreduce of {LENGTH:,} doubles: every element is {total[0]:.0f} "
            f"(1 + 2 + ... + {size}); ring and reduction took {elapsed * 1e3:.1f} ms"
        )


if __name__ == "__main__":
    main()
