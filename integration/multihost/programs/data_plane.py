"""Which transports reach which peer across hosts, and a long message striped over the NICs.

Run as ``ompy run --host h1:2,h2:2 python data_plane.py NBYTES`` (any btl selection).  Each
rank prints one JSON line: its host, and for every peer the BTL modules of its BML endpoint
(``sm`` for a peer on the same host, tcp modules for the others) with their weights, and the
ranks of its ``Split_type(COMM_TYPE_SHARED)`` communicator.  Then
rank 0 sends NBYTES to every other rank, each checks the pattern, and all meet in a barrier.
"""

import json
import socket
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
nbytes = int(sys.argv[1])
instance = comm._c.instance  # ompy's own state, not MPI's
bml = instance.pml.bml
peers = {}
for peer, proc in enumerate(instance.procs):
    if peer != rank:
        endpoint = bml.endpoint(proc)
        peers[peer] = {
            "modules": [m.name for m in endpoint.modules],
            "send": [[b.module.name, round(b.weight, 3)] for b in endpoint.send],
        }
host = socket.gethostname()
shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
neighbours = shared.allgather(rank)
shared.Free()
report = {"rank": rank, "host": host, "peers": peers, "shared": neighbours}
print(json.dumps(report), flush=True)

data = (np.arange(nbytes, dtype=np.uint64) * 2654435761 % 251).astype(np.uint8)
if rank == 0:
    for peer in range(1, size):
        comm.Send(data, peer, tag=3)
else:
    got = np.empty(nbytes, np.uint8)
    comm.Recv(got, 0, tag=3)
    if not np.array_equal(got, data):
        raise AssertionError(f"rank {rank}: the {nbytes}-byte message arrived corrupted")
comm.Barrier()
