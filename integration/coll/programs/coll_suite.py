"""Every collective of the API in one job of any size; prints one JSON report per rank.

Run as ``ompy run -n N python coll_suite.py``.  It runs the battery of the coll-basic tests
(``packages/components/coll-basic/tests/battery.py``: every collective against a numpy
reference, on COMM_WORLD and on Dup/Split/Create communicators) over the real PML, then
messages large enough for the transports' rendezvous protocols, and reports which coll
component served each operation on COMM_WORLD.
"""

import json
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

sys.path.insert(
    0, str(Path(__file__).resolve().parents[3] / "packages/components/coll-basic/tests")
)
import battery  # found through the path above

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
start = MPI.Wtime()
battery.run_battery(comm)

# Rendezvous-sized messages: 4 MiB through Bcast, Allreduce and a nonblocking Allgather.
big = np.arange(1 << 19, dtype="d") if rank == 0 else np.zeros(1 << 19)
comm.Bcast(big, root=0)
assert np.array_equal(big, np.arange(1 << 19)), "4 MiB Bcast"
total = np.empty_like(big)
comm.Allreduce(big, total)
assert np.array_equal(total, np.arange(1 << 19) * size), "4 MiB Allreduce"
gathered = np.empty((size, 1 << 16))
request = comm.Iallgather(np.full(1 << 16, float(rank)), gathered)
request.Wait()
assert all((gathered[k] == k).all() for k in range(size)), "Iallgather of 512 KiB blocks"

providers = {op: comm._c.coll.provider(op) for op in ("barrier", "allreduce", "ialltoallw")}
print(
    json.dumps(
        {
            "rank": rank,
            "size": size,
            "providers": providers,
            "seconds": round(MPI.Wtime() - start, 2),
        }
    ),
    flush=True,
)
