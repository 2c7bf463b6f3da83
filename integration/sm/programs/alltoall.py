"""Every rank sends to every other at once, several rounds, eager and rendezvous sizes mixed.

Run as ``ompy run -n N python alltoall.py ROUNDS``; with many ranks on few cores, a rank that
stops progressing while its rings are full would deadlock the job.  Prints one JSON line per rank.
"""

import json
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
SIZES = (0, 100, 3000, 40_000, 300_000)


def pattern(nbytes, seed):
    block = np.random.default_rng(seed).integers(0, 256, 4099, dtype=np.uint8)
    return np.resize(block, nbytes)


received = 0
for round_ in range(int(sys.argv[1])):
    nbytes = {peer: SIZES[(rank + peer + round_) % len(SIZES)] for peer in range(size)}
    incoming = {peer: SIZES[(peer + rank + round_) % len(SIZES)] for peer in range(size)}
    buffers = {
        peer: np.empty(incoming[peer], dtype=np.uint8) for peer in range(size) if peer != rank
    }
    recvs = [comm.Irecv(buffers[peer], peer, round_) for peer in buffers]
    sends = [
        comm.Isend(pattern(nbytes[peer], rank * 1000 + round_), peer, round_)
        for peer in range(size)
        if peer != rank
    ]
    MPI.Request.Waitall(recvs + sends)
    for peer, got in buffers.items():
        if not np.array_equal(got, pattern(incoming[peer], peer * 1000 + round_)):
            raise AssertionError(f"rank {rank}: round {round_} from {peer} is not intact")
        received += 1

print(json.dumps({"rank": rank, "received": received}), flush=True)
