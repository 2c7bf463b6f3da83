"""Point-to-point and collectives across hosts; prints one JSON report per rank.

Run as ``ompy run --host h1:2,h2:2,h3:2 python across_hosts.py``.  Every rank checks what it
received (position-dependent patterns, so a lost or misplaced fragment shows) and reports its
host and the names of its checks.
"""

import json
import socket

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
host = socket.gethostname()
checked = []
#: Both sides of tcp's eager limit (128 KiB of data + 64 bytes of header room: 128 KiB + 48 is
#: the longest eager message with ob1's 16-byte MATCH header), of its former one (64 KiB), and
#: rendezvous-sized messages.
SIZES = [0, 1, 1000, 65535, 65537, 131_120, 131_121, 1 << 20, 4 << 20]


def check(name, condition):
    if not condition:
        raise AssertionError(f"rank {rank} on {host}: {name} failed")
    checked.append(name)


def pattern(nbytes, seed):
    return np.resize(np.random.default_rng(seed).integers(0, 256, 4099, dtype=np.uint8), nbytes)


# -- point-to-point -------------------------------------------------------------------------
for index, nbytes in enumerate(SIZES):
    got = np.empty(nbytes, np.uint8)
    comm.Sendrecv(pattern(nbytes, rank * 10 + index), right, 7, got, left, 7)
    check(f"p2p:Sendrecv:{nbytes}", np.array_equal(got, pattern(nbytes, left * 10 + index)))
    requests = [comm.Irecv(got, MPI.ANY_SOURCE, 8)]
    requests.append(comm.Isend(pattern(nbytes, rank), right, 8))
    status = MPI.Status()
    MPI.Request.Waitall(requests, [status, MPI.Status()])
    check(f"p2p:Isend-Irecv-any:{nbytes}", status.Get_source() == left)
    check(f"p2p:Isend-Irecv-data:{nbytes}", np.array_equal(got, pattern(nbytes, left)))
obj = comm.sendrecv({"from": rank, "array": np.arange(rank, rank + 1000)}, right, source=left)
check("p2p:objects", obj["from"] == left and obj["array"][0] == left)
partner = rank + 1 if rank % 2 == 0 else rank - 1  # pairs (0, 1), (2, 3), ...
if partner < size:
    if rank % 2 == 0:
        comm.Ssend(np.array([rank], "i"), partner, 9)
    else:
        box = np.empty(1, "i")
        comm.Recv(box, partner, 9)
        check("p2p:Ssend", box[0] == partner)

# -- collectives ----------------------------------------------------------------------------
comm.Barrier()
check("coll:Barrier", True)
big = pattern(3 << 20, 99) if rank == 0 else np.empty(3 << 20, np.uint8)
comm.Bcast(big, root=0)
check("coll:Bcast", np.array_equal(big, pattern(3 << 20, 99)))
total = np.empty(1 << 18)
comm.Allreduce(np.full(1 << 18, rank + 1.0), total, op=MPI.SUM)
check("coll:Allreduce", np.all(total == size * (size + 1) / 2))
maxed = np.empty(4, "i") if rank == size - 1 else None
comm.Reduce(np.full(4, rank, "i"), maxed, op=MPI.MAX, root=size - 1)
check("coll:Reduce", rank != size - 1 or np.all(maxed == size - 1))
gathered = np.empty(size * 3, "i")
comm.Allgather(np.full(3, rank, "i"), gathered)
check("coll:Allgather", np.array_equal(gathered, np.repeat(np.arange(size, dtype="i"), 3)))
sent = np.arange(size, dtype="i") + 100 * rank
received = np.empty(size, "i")
comm.Alltoall(sent, received)
check("coll:Alltoall", np.array_equal(received, np.arange(size, dtype="i") * 100 + rank))
scattered = np.empty(2, "d")
comm.Scatter(np.arange(2.0 * size) if rank == 1 else None, scattered, root=1)
check("coll:Scatter", np.array_equal(scattered, [2.0 * rank, 2.0 * rank + 1]))
hosts = comm.allgather(host)
check("coll:allgather-objects", hosts[rank] == host and len(hosts) == size)
check("coll:bcast-object", comm.bcast({"root": host} if rank == 0 else None)["root"] == hosts[0])
check("coll:reduce-object", comm.allreduce(rank) == size * (size - 1) // 2)

# -- communicators by host ------------------------------------------------------------------
by_host = comm.Split(sorted(set(hosts)).index(host), rank)
check("comm:Split-by-host", by_host.Get_size() == hosts.count(host))
check("comm:Split-allreduce", by_host.allreduce(1) == hosts.count(host))
by_host.Free()

print(json.dumps({"rank": rank, "size": size, "host": host, "checks": checked}), flush=True)
