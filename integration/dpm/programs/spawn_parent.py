"""A job that spawns workers and exchanges data with them over the intercommunicator.

argv: the number of workers.  Prints one JSON line (rank 0 of the parent job) and each worker
prints its own (``spawn_worker.py``).
"""

import json
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

workers = int(sys.argv[1])
world = MPI.COMM_WORLD
worker = str(Path(__file__).with_name("spawn_worker.py"))
errcodes: list = []
inter = world.Spawn(sys.executable, args=[worker, "x y"], maxprocs=workers, errcodes=errcodes)
report = {
    "who": "parent",
    "rank": world.rank,
    "is_inter": inter.Is_inter(),
    "remote_size": inter.Get_remote_size(),
    "local_size": inter.Get_size(),
    "errcodes": errcodes,
    "parent_of_parent_is_null": MPI.Comm.Get_parent() == MPI.COMM_NULL,
}
if world.rank == 0:
    for r in range(workers):
        inter.send({"task": r, "scale": 10}, dest=r, tag=7)
    results = np.zeros(workers, dtype="i8")
    for r in range(workers):
        inter.Recv(results[r : r + 1], source=r, tag=8)
    report["results"] = results.tolist()
# a collective over the intercommunicator: the parents' root broadcasts to the workers
inter.bcast("from the parents", root=MPI.ROOT if world.rank == 0 else MPI.PROC_NULL)
report["gathered"] = inter.allgather(world.rank)
merged = inter.Merge(high=False)
report["merged"] = [merged.Get_rank(), merged.Get_size(), merged.allreduce(1)]
merged.Free()
inter.Disconnect()
report["disconnected"] = inter == MPI.COMM_NULL
print(json.dumps(report), flush=True)
