"""Every neighbor collective on every topology kind in one job; one JSON report per rank.

Run as ``ompy run -n N python neighbor_suite.py``.  It runs the neighbor battery of the
coll-basic tests (``packages/components/coll-basic/tests/neighbor_battery.py``: Cartesian, graph
and distributed-graph communicators, every neighbor collective in blocking, nonblocking, vector,
general and object forms against MPI's matching rules, and the 2-D halo exchange with
``Neighbor_alltoallw`` against ``Sendrecv``) over the real PML, then a halo exchange of large
faces (rendezvous-sized), and reports the checks passed and who served the operations.
"""

import json
import sys
from pathlib import Path

from ompy import MPI

sys.path.insert(
    0, str(Path(__file__).resolve().parents[3] / "packages/components/coll-basic/tests")
)
import neighbor_battery  # found through the path above

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
start = MPI.Wtime()
passed = neighbor_battery.run_neighbor_battery(MPI, comm)
passed += neighbor_battery.halo_exchange(MPI, comm, ny=300, nx=200)  # faces of 1.6 to 2.4 KiB..
passed += neighbor_battery.halo_exchange(MPI, comm, ny=40_000, nx=3)  # .. and of 320 KiB
cart = comm.Create_cart([comm.Get_size()], [True])
providers = {
    op: cart._c.coll.provider(op)
    for op in ("neighbor_alltoall", "ineighbor_alltoallw", "neighbor_allgather_object")
}
cart.Free()
print(
    json.dumps(
        {
            "rank": rank,
            "passed": passed,
            "providers": providers,
            "seconds": round(MPI.Wtime() - start, 2),
        }
    ),
    flush=True,
)
