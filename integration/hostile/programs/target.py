"""A job for hostile-client tests: rank 1 waits in a receive until the test says "go".

Every rank writes ``<flags>/pid<rank>`` and, once a first exchange made the transports connect,
``<flags>/ready<rank>``.  Then rank 1 blocks in ``Recv`` from rank 0 (the victim, sleeping in
the progress engine) while rank 0 waits for the file ``<flags>/go`` and then sends.  Each rank
prints one JSON line with what it received.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from ompy import MPI

flags = Path(sys.argv[1])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
(flags / f"pid{rank}").write_text(str(os.getpid()))

buf = np.zeros(1, dtype=np.int64)
if rank == 0:
    comm.Send(np.array([7], dtype=np.int64), dest=1)
    comm.Recv(buf, source=1)
elif rank == 1:
    comm.Recv(buf, source=0)
    comm.Send(buf, dest=0)
comm.Barrier()
(flags / f"ready{rank}").write_text("")

if rank == 0:
    deadline = time.monotonic() + 60
    while not (flags / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    comm.Send(np.array([42], dtype=np.int64), dest=1)
elif rank == 1:
    comm.Recv(buf, source=0)
print(json.dumps({"rank": rank, "got": int(buf[0])}), flush=True)
