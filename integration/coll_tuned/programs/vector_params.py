"""Gatherv, Scatterv and Alltoallw through the API, for jobs that force their algorithms.

Uneven blocks (the vector messages split as mpi4py splits them), every root; prints one JSON
line per rank naming the coll component that served each operation.  A wrong result fails an
assertion, and so the job.
"""

import json

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
total = 5 * size + 2
counts = [total // size + (r < total % size) for r in range(size)]
displs = [sum(counts[:r]) for r in range(size)]
whole = np.arange(total, dtype="d") * 3 + 1
mine = whole[displs[rank] : displs[rank] + counts[rank]]
for root in range(size):
    gathered = np.full(total, -1.0) if rank == root else None
    comm.Gatherv(mine.copy(), gathered, root=root)
    if rank == root:
        assert np.array_equal(gathered, whole), f"Gatherv root={root}"
    got = np.full(counts[rank], -1.0)
    comm.Scatterv([whole, counts, displs, MPI.DOUBLE] if rank == root else None, got, root=root)
    assert np.array_equal(got, mine), f"Scatterv root={root}"
# Alltoallw: to rank j, j + 1 ints; byte displacements; one datatype per peer.
sendcounts = [j + 1 for j in range(size)]
senddispls = [4 * sum(sendcounts[:j]) for j in range(size)]
outgoing = np.concatenate([np.full(j + 1, rank * 100 + j, "i") for j in range(size)])
incoming = np.full((rank + 1) * size, -1, "i")
recvdispls = [4 * (rank + 1) * j for j in range(size)]
comm.Alltoallw(
    [outgoing, (sendcounts, senddispls), [MPI.INT] * size],
    [incoming, ([rank + 1] * size, recvdispls), [MPI.INT] * size],
)
want = np.concatenate([np.full(rank + 1, j * 100 + rank, "i") for j in range(size)])
assert np.array_equal(incoming, want), "Alltoallw"
table = comm._c.coll
by = {op: table.provider(op) for op in ("gatherv", "scatterv", "alltoallw")}
print(json.dumps({"rank": rank, "by": by}), flush=True)
