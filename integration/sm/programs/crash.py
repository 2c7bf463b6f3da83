"""Ranks talk over sm, then rank 1 fails: ``ompy run -n N python crash.py raise|kill``.

The others are blocked in a receive from rank 1 when it fails, with every segment attached.
Before that, each rank prints the job's files in /dev/shm it sees: once every local peer has
attached, none should be left to a crash (the launcher's clean-up is a second line of defence).
"""

import json
import os
import signal
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
data = np.full(1 << 20, rank, dtype=np.uint8)
got = np.empty_like(data)
comm.Sendrecv(data, (rank + 1) % size, 0, got, (rank - 1) % size, 0)
comm.Barrier()
files = sorted(p.name for p in Path("/dev/shm").glob(f"ompy-{os.environ['OMPY_JOBID']}-*"))
print(json.dumps({"rank": rank, "shm": files}), flush=True)
comm.Barrier()  # every rank looked before rank 1 fails
if rank == 1:
    if sys.argv[1] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("rank 1 fails on purpose")
comm.Recv(got, 1, 1)  # never sent
