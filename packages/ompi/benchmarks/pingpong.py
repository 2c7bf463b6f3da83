"""Two-rank ping-pong through the MPI API: latency and bandwidth, buffer and object methods.

    ompy run -n 2 python packages/ompi/benchmarks/pingpong.py
    ompy run -n 2 --mca btl self,tcp python packages/ompi/benchmarks/pingpong.py --sizes 8,16777216

For each API and size, every round trip is timed after a warm-up; the table gives half the
median round trip (``lat_us``), half the fastest one and ``size / lat`` in GB/s.  The APIs:

- ``buffer``: ``Send``/``Recv`` of numpy uint8 arrays (the path with no serialization);
- ``bytes``: ``send``/``recv`` of a bytes object (pickled in-band: copied on both sides);
- ``numpy``: ``send``/``recv`` of a numpy array (pickle protocol 5: the array's memory travels
  out of band, received into a fresh buffer that becomes the new array's memory).

Numbers, not a test: the machine's load shows in them; compare runs made in the same minutes.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ompy import MPI

SIZES = [8, 1024, 64 * 1024, 1 << 20, 16 << 20]


def iterations(size: int, scale: float) -> tuple[int, int]:
    """(timed, warm-up) round trips for ``size`` bytes."""
    timed = 5000 if size <= 1024 else 1000 if size <= 64 * 1024 else 100 if size <= 1 << 20 else 20
    return max(3, int(timed * scale)), max(1, int(timed * scale) // 10)


def buffer_round(comm: MPI.Comm, rank: int, send: np.ndarray, recv: np.ndarray) -> None:
    if rank == 0:
        comm.Send(send, 1, 1)
        comm.Recv(recv, 1, 2)
    else:
        comm.Recv(recv, 0, 1)
        comm.Send(recv, 0, 2)


def object_round(comm: MPI.Comm, rank: int, obj: object) -> None:
    if rank == 0:
        comm.send(obj, 1, 1)
        comm.recv(source=1, tag=2)
    else:
        comm.send(comm.recv(source=0, tag=1), 0, 2)


def measure(comm: MPI.Comm, rank: int, api: str, size: int, scale: float) -> list[float]:
    """The round-trip times (seconds) of rank 0; empty on rank 1."""
    timed, warmup = iterations(size, scale)
    send = np.full(size, 0x5A, np.uint8)
    recv = np.empty(size, np.uint8)
    obj = send.tobytes() if api == "bytes" else send
    times = []
    comm.Barrier()
    for index in range(warmup + timed):
        start = time.perf_counter()
        if api == "buffer":
            buffer_round(comm, rank, send, recv)
        else:
            object_round(comm, rank, obj)
        if index >= warmup:
            times.append(time.perf_counter() - start)
    comm.Barrier()
    return times if rank == 0 else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--apis", default="buffer,bytes,numpy")
    parser.add_argument("--scale", type=float, default=1.0, help="scale the iteration counts")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != 2:
        raise SystemExit("pingpong.py runs with exactly 2 ranks (ompy run -n 2 ...)")
    if rank == 0:
        print(f"{'api':>7} {'bytes':>10} {'lat_us':>10} {'min_us':>10} {'GB/s':>8}")
    for api in args.apis.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            times = measure(comm, rank, api, size, args.scale)
            if rank == 0:
                half = statistics.median(times) / 2
                print(
                    f"{api:>7} {size:>10} {half * 1e6:>10.2f} {min(times) / 2 * 1e6:>10.2f} "
                    f"{size / half / 1e9:>8.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
