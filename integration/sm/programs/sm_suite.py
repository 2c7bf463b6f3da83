"""Shared-memory specifics through MPI; prints one JSON report per rank.

Run as ``ompy run -n N python sm_suite.py LARGEST RING_BYTES FLAG_DIR`` with ``btl`` including
sm.  RING_BYTES is the size of one ring (``btl_sm_fbox_size``) so the program can send several
rings' worth; FLAG_DIR is where ranks leave files for each other when they must not call MPI.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
LARGEST, RING = int(sys.argv[1]), int(sys.argv[2])
FLAGS = Path(sys.argv[3])
checked = []


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checked.append(name)


def pattern(nbytes, seed):
    """Bytes that differ at every offset modulo a prime: misplaced fragments show."""
    block = np.random.default_rng(seed).integers(0, 256, 4099, dtype=np.uint8)
    return np.resize(block, nbytes)


def sizes():
    """0 B to LARGEST around the ring (through CMA get, or fragments when it is off)."""
    nbytes = 0
    while True:
        out = pattern(nbytes, rank)
        got = np.empty(nbytes, dtype=np.uint8)
        status = MPI.Status()
        comm.Sendrecv(out, right, 1, got, left, 1, status)
        intact = np.array_equal(got, pattern(nbytes, left))
        check(f"sizes:{nbytes}", intact and status.Get_count(MPI.BYTE) == nbytes)
        del out, got
        if nbytes >= LARGEST:
            break
        nbytes = min(LARGEST, max(1, nbytes * 16))


def wrap_around():
    """Four rings' worth of records of odd sizes: each ring wraps, records split at its end."""
    lengths = []
    while sum(lengths) < 4 * RING:
        lengths.append(1 + (len(lengths) * 997) % 3000)
    sends = [comm.Isend(pattern(n, i), right, 2) for i, n in enumerate(lengths)]
    for i, n in enumerate(lengths):
        got = np.empty(n, dtype=np.uint8)
        comm.Recv(got, left, 2)
        if not np.array_equal(got, pattern(n, i)):
            check("wrap:in order and intact", False, f"message {i} of {n} B")
    MPI.Request.Waitall(sends)
    check("wrap:in order and intact", True)


def back_pressure():
    """An even rank fills its odd neighbour's ring while the neighbour makes no MPI call."""
    count = 4 * RING // 2000
    if rank % 2 == 0 and rank + 1 < size:
        # Standard sends may complete once queued, so the test reads the BTL's count of sends
        # that found the ring full (reported at finalize) rather than the requests.
        sends = [comm.Isend(pattern(2000, i), rank + 1, 3) for i in range(count)]
        (FLAGS / f"full-{rank}").touch()
        MPI.Request.Waitall(sends)
        check("back-pressure:sends complete once drained", True)
    elif rank % 2 == 1:
        while not (FLAGS / f"full-{rank - 1}").exists():
            time.sleep(0.01)  # no MPI call: nothing drains the ring
        for i in range(count):
            got = np.empty(2000, dtype=np.uint8)
            comm.Recv(got, rank - 1, 3)
            if not np.array_equal(got, pattern(2000, i)):
                check("back-pressure:in order and intact", False, f"message {i}")
        check("back-pressure:in order and intact", True)


for section in (sizes, wrap_around, back_pressure):
    section()
    comm.Barrier()

report = {"rank": rank, "pid": os.getpid(), "checks": sorted(set(checked))}
print(json.dumps(report), flush=True)
