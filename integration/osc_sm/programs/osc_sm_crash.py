"""A rank fails while shared-memory windows are alive: ``raise`` or ``kill``.

Usage: ``ompy run -n N python osc_sm_crash.py raise|kill``.  Every rank makes a shared window
over the world and a window over a split of it, holds a lock on one and has views of the
memory, then rank 1 raises an exception or SIGKILLs itself while the others wait in a fence.
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
shared = MPI.Win.Allocate_shared(4096, 1, comm=world)
other = MPI.Win.Allocate(4096, 8, comm=half)
views = [np.frombuffer(shared.Shared_query(peer)[0], np.uint8) for peer in range(world.Get_size())]
views[0][rank] = rank
other.Lock(0, MPI.LOCK_SHARED)
print(f"rank {rank}: windows made", flush=True)
if rank == 1:
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("rank 1 fails on purpose")
shared.Fence()
