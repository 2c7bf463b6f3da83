"""Intercommunicators in one job of any size (at least 2); prints one JSON report per rank.

Run as ``ompy run -n N python intercomm_suite.py``.  It runs the intercommunicator battery of
the coll-inter tests (``packages/components/coll-inter/tests/inter_battery.py``: intercommunicators
of three shapes, point-to-point across the groups, every collective checked against values each
rank computes locally, the constructors) over the real PML, then messages large enough for the
transports' rendezvous protocols across the groups, and reports which coll component served
the intercommunicator.
"""

import json
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

sys.path.insert(
    0, str(Path(__file__).resolve().parents[3] / "packages/components/coll-inter/tests")
)
import inter_battery  # found through the path above

world = MPI.COMM_WORLD
rank, size = world.Get_rank(), world.Get_size()
passed = inter_battery.run_inter_battery(world)

# Rendezvous-sized messages across two unequal halves: 2 MiB Bcast, Allreduce, Alltoall.
half = (size + 1) // 2
low = rank < half
local = world.Split(0 if low else 1, rank)
inter = local.Create_intercomm(0, world, half if low else 0, tag=3)
local.Free()
theirs = list(range(half, size)) if low else list(range(half))
n = 1 << 18
root = (MPI.ROOT if rank == 0 else MPI.PROC_NULL) if low else 0
big = np.arange(n, dtype="d") if root == MPI.ROOT else np.zeros(n)
inter.Bcast(big, root=root)
if root != MPI.PROC_NULL:  # the root keeps its data, the other group receives it
    assert np.array_equal(big, np.arange(n)), "2 MiB Bcast across"
total = np.empty(n)
inter.Allreduce(np.full(n, float(rank)), total)
assert (total == sum(theirs)).all(), "2 MiB Allreduce across"
remote = inter.Get_remote_size()
blocks = np.empty((remote, 1 << 15))
request = inter.Ialltoall(
    np.repeat(np.arange(remote, dtype="d")[:, None] + 10 * rank, 1 << 15, 1), blocks
)
request.Wait()
mine = inter.Get_rank()
assert all((blocks[i] == mine + 10 * theirs[i]).all() for i in range(remote)), "Ialltoall 256 KiB"
passed.append("rendezvous across")
providers = {
    op: inter._c.coll.provider(op)
    for op in ("barrier", "iallreduce", "bcast_object", "allreduce_init")
}
inter.Free()
print(
    json.dumps({"rank": rank, "size": size, "passed": passed, "providers": providers}), flush=True
)
