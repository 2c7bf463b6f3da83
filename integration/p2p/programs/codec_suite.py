"""MPI.pickle under ompy run: one codec for lowercase point-to-point and object collectives.

Every rank prints one JSON line: its rank and the checks it passed; a failed check raises (and
ompy run reports the rank's exit).  A json codec shows that it was used: tuples arrive as lists.
"""

import json
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
checks = []


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"rank {rank}: {name} failed {detail}")
    checks.append(name)


dumped = []


def dumps(obj):
    dumped.append(type(obj).__name__)
    return json.dumps(obj).encode()


def loads(data):
    return json.loads(bytes(data).decode())


# -- a custom codec ---------------------------------------------------------------------------
MPI.pickle.__init__(dumps, loads)
check("custom:protocol", MPI.pickle.PROTOCOL is None)
request = comm.isend((rank, "to the right"), right, tag=1)
got = comm.recv(source=left, tag=1)
request.wait()
check("custom:sendrecv", got == [left, "to the right"], got)
got = comm.sendrecv({"from": (rank,)}, right, 2, source=left, recvtag=2)
check("custom:sendrecv_call", got == {"from": [left]}, got)
got = comm.bcast(("root", 0) if rank == 0 else None, root=0)
check("custom:bcast", got == ["root", 0], got)
got = comm.allreduce((rank,), op=lambda a, b: [*a, *b])
check("custom:allreduce", got == list(range(size)), got)
got = comm.gather((rank,), root=0)
check("custom:gather", got == ([[r] for r in range(size)] if rank == 0 else None), got)
check("custom:used", "tuple" in dumped and "dict" in dumped, dumped)

# -- the default again: pickle 5, large arrays out of band ------------------------------------
MPI.pickle.__init__()
check("default:protocol", MPI.pickle.PROTOCOL == 5 and MPI.pickle.THRESHOLD == 16 * 1024)
array = np.full(200_000, rank, dtype=np.float64)
request = comm.isend({"a": array, "t": (1, 2)}, right, tag=3)
got = comm.recv(source=left, tag=3)
request.wait()
check("default:array", got["t"] == (1, 2) and got["a"].sum() == 200_000 * left)
check("default:writable", got["a"].flags.writeable)
got = comm.bcast(array if rank == 0 else None, root=0)
check("default:bcast_array", got.shape == (200_000,) and not got.any())
got = comm.allreduce(np.full(5_000, 1.0))
check("default:allreduce_array", np.array_equal(got, np.full(5_000, float(size))))

MPI.pickle.THRESHOLD = 1 << 40  # nothing out of band: the same objects, in-band
got = comm.bcast(array if rank == 0 else None, root=0)
check("inband:bcast_array", got.shape == (200_000,) and not got.any())
MPI.pickle.__init__()

print(json.dumps({"rank": rank, "checks": checks}), flush=True)
sys.exit(0)
