"""Each rank reports its place and checks p2p and a collective across the whole job."""

import json
import os

from ompy import MPI
from ompy.orte import runtime as orte_runtime

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
left = comm.sendrecv(rank, dest=(rank + 1) % size, source=(rank - 1) % size)
total = comm.allreduce(rank)
identity = orte_runtime.init().identity  # the run-time MPI started (init is idempotent)
print(
    json.dumps(
        {
            "rank": rank,
            "size": size,
            "left": left,
            "total": total,
            "node": identity.node_name,
            "local_rank": identity.local_rank,
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "direct": identity.direct,
        }
    ),
    flush=True,
)
