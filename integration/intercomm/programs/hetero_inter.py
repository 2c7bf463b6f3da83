"""A heterogeneous job (rank 1 presents big-endian data) on an intercommunicator: every buffer
reduction between the groups is refused with ``ERR_UNSUPPORTED_OPERATION`` on every process
(the data of the two groups cannot be reduced without conversions, which are not implemented
between groups), and the collectives that only move data still move it, converted.

Prints one JSON line per rank: the outcome of each call.
"""

from __future__ import annotations

import json

import numpy as np

from ompy import MPI

world = MPI.COMM_WORLD
rank = world.Get_rank()
local = world.Split(rank % 2, rank)
inter = local.Create_intercomm(0, world, 1 - rank % 2, 11)
remote = inter.Get_remote_size()
outcome: dict[str, object] = {}


def refused(name, call):
    try:
        call()
    except MPI.Exception as error:
        outcome[name] = error.Get_error_class() == MPI.ERR_UNSUPPORTED_OPERATION and (
            "heterogeneous job" in str(error)
        )
    else:
        outcome[name] = "not refused"


refused("Allreduce", lambda: inter.Allreduce(np.ones(2), np.zeros(2)))
refused("Iallreduce", lambda: inter.Iallreduce(np.ones(2), np.zeros(2)).Wait())
refused(
    "Reduce_scatter_block",
    lambda: inter.Reduce_scatter_block(np.ones(local.Get_size()), np.zeros(1)),
)
refused(
    "Reduce_scatter",
    lambda: inter.Reduce_scatter(
        np.ones(local.Get_size()), np.zeros(1), recvcounts=[1] * local.Get_size()
    ),
)
refused("Allreduce_init", lambda: inter.Allreduce_init(np.ones(2), np.zeros(2)))
got = np.zeros(remote, dtype=np.int32)
inter.Allgather(np.full(1, 100 + rank, dtype=np.int32), got)
remote_ranks = [r for r in range(world.Get_size()) if r % 2 != rank % 2]
outcome["Allgather"] = got.tolist() == [100 + r for r in remote_ranks]
inter.Free()
local.Free()
print(json.dumps({"rank": rank, "outcome": outcome}), flush=True)
