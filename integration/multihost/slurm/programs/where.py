"""Each rank reports its place and checks p2p (a 1 MiB ring) and a collective across the job."""

import json
import os
import socket

import numpy as np

from ompy import MPI
from ompy.orte import runtime as orte_runtime

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left = comm.sendrecv(rank, dest=(rank + 1) % size, source=(rank - 1) % size)
total = comm.allreduce(rank)
block = np.full(1 << 17, rank, dtype="f8")  # 1 MiB to the right neighbour
got = np.empty_like(block)
comm.Sendrecv(block, (rank + 1) % size, 7, got, (rank - 1) % size, 7)
identity = orte_runtime.init().identity  # the run-time MPI started (init is idempotent)
print(
    json.dumps(
        {
            "rank": rank,
            "size": size,
            "left": left,
            "ring": bool((got == (rank - 1) % size).all()),
            "total": total,
            "node": identity.node_name,
            "host": socket.gethostname(),
            "local_rank": identity.local_rank,
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "direct": identity.direct,
        }
    ),
    flush=True,
)
