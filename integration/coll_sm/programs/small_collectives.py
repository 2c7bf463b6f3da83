"""The small collectives of a program's hot loop, through the API, on the world: one job.

Usage: ``ompy run -n N python small_collectives.py``.  Checks, on every rank, against numpy:

- ``hot``: Barrier, Bcast from every root, Reduce to every root and Allreduce (also
  ``IN_PLACE``) of 1..8 elements of several basic types and ops, in a loop of many calls, the
  way a program's hot loop makes them (the plain-buffer path and coll sm's one-step path),
  each call's result checked; and the same calls in the general forms (``[buf, datatype]``);
- ``objects``: bcast, reduce and allreduce of Python objects between the buffer calls;
- ``p2p``: point-to-point messages in flight around the collectives stay matched and ordered;
- ``late``: a rank entering a collective long after the others; the waiting ranks' processor
  time over that wait (they yield, then sleep until the late rank's store wakes them).

Rank 0 prints one JSON line: the checks per section and each rank's CPU fraction in the wait.
"""

from __future__ import annotations

import json
import time
from collections import Counter

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
checks: Counter[str] = Counter()
TYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8]
OPS = [(MPI.SUM, np.add), (MPI.MAX, np.maximum), (MPI.MIN, np.minimum)]


def check(section: str, ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(f"rank {rank}: {section}: {what}")
    checks[section] += 1


def value(r: int, count: int, dtype, round_: int) -> np.ndarray:
    return ((np.arange(count) * 3 + r * 7 + round_) % 11).astype(dtype)


def reduced(op, count: int, dtype, round_: int) -> np.ndarray:
    out = value(size - 1, count, dtype, round_)
    for r in range(size - 2, -1, -1):
        out = op(value(r, count, dtype, round_), out).astype(dtype)
    return out


def typed(array: np.ndarray) -> list:
    return [array, MPI.Datatype.fromcode(array.dtype.char)]


def hot() -> None:
    for round_ in range(40):
        world.Barrier()
        for dtype in TYPES:
            count = 1 + round_ % 8
            for (mpi_op, np_op), general in zip(OPS, (False, True, False), strict=True):
                form = typed if general else (lambda a: a)
                mine = value(rank, count, dtype, round_)
                want = reduced(np_op, count, dtype, round_)
                out = np.zeros(count, dtype)
                world.Allreduce(form(mine), form(out), op=mpi_op)
                check("hot", np.array_equal(out, want), f"Allreduce {dtype} {mpi_op}")
                inout = mine.copy()
                world.Allreduce(MPI.IN_PLACE, form(inout), op=mpi_op)
                check("hot", np.array_equal(inout, want), f"Allreduce IN_PLACE {dtype}")
                root = round_ % size
                got = np.zeros(count, dtype)
                world.Reduce(form(mine), form(got), op=mpi_op, root=root)
                if rank == root:
                    check("hot", np.array_equal(got, want), f"Reduce {dtype} to {root}")
                buf = value(root, count, dtype, round_) if rank == root else np.zeros(count, dtype)
                world.Bcast(form(buf), root=root)
                check("hot", np.array_equal(buf, value(root, count, dtype, round_)), "Bcast")
        raw = bytearray(b"%02d-bytes" % round_) if rank == 0 else bytearray(8)
        world.Bcast(raw, root=0)
        check("hot", bytes(raw) == b"%02d-bytes" % round_, "Bcast of a bytearray")


def objects() -> None:
    for round_ in range(10):
        got = world.bcast({"round": round_, "from": 0} if rank == 0 else None, root=0)
        check("objects", got == {"round": round_, "from": 0}, "bcast")
        world.Allreduce(MPI.IN_PLACE, np.zeros(1))
        total = world.allreduce(rank + round_)
        check("objects", total == size * (size - 1) // 2 + size * round_, "allreduce")
        largest = world.reduce((rank, "r"), op=MPI.MAX, root=size - 1)
        check("objects", largest == ((size - 1, "r") if rank == size - 1 else None), "reduce")


def p2p() -> None:
    right, left = (rank + 1) % size, (rank - 1) % size
    for round_ in range(20):
        out = np.array([rank, round_], np.int64)
        request = world.Isend(out, dest=right, tag=round_)
        world.Allreduce(MPI.IN_PLACE, np.ones(1))
        world.Barrier()
        got = np.zeros(2, np.int64)
        world.Recv(got, source=left, tag=round_)
        request.Wait()
        check("p2p", got.tolist() == [left, round_], "ring message")


def late() -> float:
    """The CPU fraction of this rank over a collective the last rank enters 1.5 s late."""
    world.Barrier()
    wall, cpu = time.monotonic(), time.process_time()
    if rank == size - 1:
        time.sleep(1.5)
    buf = np.zeros(1)
    world.Allreduce(MPI.IN_PLACE, buf)
    world.Barrier()
    fraction = (time.process_time() - cpu) / (time.monotonic() - wall)
    check("late", buf[0] == 0.0, "the late allreduce")
    return fraction


hot()
objects()
p2p()
fraction = late()
fractions = world.gather(fraction, root=0)
everyone = world.gather(dict(checks), root=0)
provider = world._live("small").coll.provider("allreduce")
if rank == 0:
    print(json.dumps({"ranks": size, "checks": everyone, "cpu": fractions, "by": provider}))
