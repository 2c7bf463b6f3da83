"""A spawned worker: answers its parents' task, takes part in collectives, disconnects."""

import json
import sys

import numpy as np

from ompy import MPI

parent = MPI.Comm.Get_parent()
world = MPI.COMM_WORLD
report = {
    "who": "worker",
    "rank": world.rank,
    "size": world.size,
    "argv": sys.argv[1:],
    "parent_remote_size": parent.Get_remote_size(),
    "is_inter": parent.Is_inter(),
}
task = parent.recv(source=0, tag=7)
parent.Send(np.array([task["task"] * task["scale"] + 1], dtype="i8"), dest=0, tag=8)
report["bcast"] = parent.bcast(None, root=0)
report["gathered"] = parent.allgather(100 + world.rank)
merged = parent.Merge(high=True)
report["merged"] = [merged.Get_rank(), merged.Get_size(), merged.allreduce(1)]
merged.Free()
report["world_sum"] = world.allreduce(world.rank)
parent.Disconnect()
report["parent_after"] = MPI.Comm.Get_parent() == MPI.COMM_NULL
print(json.dumps(report), flush=True)
