"""Every operation of coll sm on the world and on sub-communicators of every size, in one job.

Usage: ``ompy run -n N python coll_sm_suite.py [--big] [--no-sm]``.  For each k in 1..N the
world splits into ranks < k and ranks >= k, and both halves run the battery at once; the world
runs it too.  Each battery checks which component serves the operations (sm on two or more
ranks, unless ``--no-sm``), then barrier, bcast, reduce and allreduce against numpy, with
several ops and datatypes, a non-commutative user operation, ``IN_PLACE``, and point-to-point
messages in flight around the collectives.  ``--big`` adds messages of several MiB on the
world.  Rank 0 prints one JSON line: the number of checks per section.
"""

from __future__ import annotations

import glob
import json
import sys
from collections import Counter

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
BIG = "--big" in sys.argv
EXPECT_SM = "--no-sm" not in sys.argv
MASK = 0xFFFF
checks: Counter[str] = Counter()


def check(section: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"rank {world.Get_rank()}: {section}: {what}")
    checks[section] += 1


def compose(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Affine maps t -> a t + b mod 2**16 packed as a << 32 | b: apply ``inner`` first."""
    a1, b1 = outer >> 32, outer & MASK
    a2, b2 = inner >> 32, inner & MASK
    return (((a1 * a2) & MASK) << 32) | ((a1 * b2 + b1) & MASK)


def _compose(inmem, inoutmem, _datatype) -> None:
    right = np.frombuffer(inoutmem, dtype=np.int64)
    right[:] = compose(np.frombuffer(inmem, dtype=np.int64), right)


COMPOSE = MPI.Op.Create(_compose, commute=False)


def data(rank: int, count: int, dtype=np.float64) -> np.ndarray:
    return np.random.default_rng(1000 * rank + count).integers(-50, 50, count).astype(dtype)


def affine(rank: int, count: int) -> np.ndarray:
    rng = np.random.default_rng(7 * rank + count)
    return (rng.integers(0, MASK + 1, count) << 32) | rng.integers(0, MASK + 1, count)


def battery(comm: MPI.Intracomm, big: bool) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    internal = comm._live("suite")
    table = internal.coll
    jobid = internal.instance.procs[0].jobid
    # a communicator's segment is unlinked once every member attached, before it is used
    creator, cid = internal.world_ranks[0], internal.context_id
    named = glob.glob(f"/dev/shm/ompy-{jobid}-coll-sm-{creator}-{cid}-*")
    check("unlinked", not named, f"segments still named in /dev/shm: {named}")
    for op in ("barrier", "bcast", "reduce", "allreduce"):
        # sm must win over the in-tree fallbacks; a third-party component installed in the
        # environment with a higher priority may still take an operation.
        served = table.provider(op)
        if EXPECT_SM and size > 1:
            check("providers", served not in ("basic", "tuned"), f"{op} by {served}")
        else:
            check("providers", served != "sm", f"{op} by {served} on {size} ranks")

    # point-to-point in flight across the collectives
    left, right = (rank - 1) % size, (rank + 1) % size
    incoming = np.zeros(1000, np.int32)
    posted = comm.Irecv(incoming, source=left, tag=7)
    sent = comm.Isend(np.full(1000, rank, np.int32), dest=right, tag=7)

    for _ in range(3):
        comm.Barrier()
    check("barrier", True, "")

    sizes = [0, 1, 8, 5000, 300_000] + ([3 << 20] if big else [])
    for root in {0, size - 1}:
        for nbytes in sizes:
            want = (np.arange(nbytes) % 251).astype(np.uint8) ^ root
            buf = want.copy() if rank == root else np.zeros(nbytes, np.uint8)
            comm.Bcast(buf, root=root)
            check("bcast", np.array_equal(buf, want), f"{nbytes} B from {root}")

    counts = [0, 1, 1000, 70_000] + ([400_000] if big else [])
    for count in counts:
        want = sum(data(r, count) for r in range(size))
        out = np.full(count, -1.0)
        comm.Allreduce(data(rank, count), out, op=MPI.SUM)
        check("allreduce", np.array_equal(out, want), f"SUM of {count} doubles")
        inout = data(rank, count)
        comm.Allreduce(MPI.IN_PLACE, inout, op=MPI.SUM)
        check("allreduce", np.array_equal(inout, want), f"IN_PLACE SUM of {count}")
        ints = [data(r, count, np.int32) for r in range(size)]
        out32 = np.zeros(count, np.int32)
        comm.Allreduce(ints[rank], out32, op=MPI.MAX)
        check("allreduce", np.array_equal(out32, np.max(ints, axis=0)), f"MAX of {count}")

    for count in (1, 1000, 40_000):
        want = affine(0, count)
        for r in range(1, size):
            want = compose(want, affine(r, count))
        out = np.zeros(count, np.int64)
        comm.Allreduce(affine(rank, count), out, op=COMPOSE)
        check("noncommutative", np.array_equal(out, want), f"allreduce of {count}")
        root = size - 1
        out[:] = 0
        comm.Reduce(affine(rank, count), out if rank == root else None, op=COMPOSE, root=root)
        check("noncommutative", rank != root or np.array_equal(out, want), f"reduce {count}")

    for count in counts:
        root = count % size
        values = [data(r, count, np.int64) for r in range(size)]
        out = np.zeros(count, np.int64)
        if rank == root:
            out[:] = values[rank]
            comm.Reduce(MPI.IN_PLACE, out, op=MPI.SUM, root=root)
        else:
            comm.Reduce(values[rank], None, op=MPI.SUM, root=root)
        check("reduce", rank != root or np.array_equal(out, sum(values)), f"{count} to {root}")

    MPI.Request.Waitall([posted, sent])
    check("p2p", bool(np.all(incoming == left)), "message across the collectives")


def main() -> None:
    rank, size = world.Get_rank(), world.Get_size()
    battery(world, BIG)
    for k in range(1, size + 1):
        half = world.Split(0 if rank < k else 1, rank)
        battery(half, False)
        half.Free()
    totals = world.gather(dict(checks), root=0)
    if rank == 0:
        print(json.dumps({"ranks": size, "checks": totals}), flush=True)


main()
