"""A rank fails while communicators with sm segments are alive: ``raise`` or ``kill``.

Usage: ``ompy run -n N python coll_sm_crash.py raise|kill``.  The world and a split of it run
collectives (so their segments exist and are mapped), then rank 1 raises an exception or
SIGKILLs itself while the others wait in a barrier.
"""

from __future__ import annotations

import os
import signal
import sys

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank = world.Get_rank()
half = world.Split(rank % 2, rank)
buf = np.arange(10_000, dtype=np.float64)
world.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
half.Bcast(buf, root=0)
print(f"rank {rank}: collectives done", flush=True)
if rank == 1:
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("rank 1 fails on purpose")
world.Barrier()
