"""Rank 0 starts a tcp connection (its first send) and then computes, without entering MPI,
for longer than the handshake deadline; rank 1 waits for the message meanwhile.  The
connection rank 1 closes at its deadline must be tried again, not turned into an error."""

import json
import sys
import time

import numpy as np

from ompy import MPI

pause = float(sys.argv[1])
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
buf = np.zeros(4, dtype=np.int64)
if rank == 0:
    request = comm.Isend(np.arange(4, dtype=np.int64), dest=1)
    time.sleep(pause)  # busy elsewhere: no progress, the handshake stalls on this side
    request.Wait()
    comm.Recv(buf, source=1)
else:
    comm.Recv(buf, source=0)
    comm.Send(buf * 2, dest=0)
print(json.dumps({"rank": rank, "got": buf.tolist()}), flush=True)
