"""A few collectives through the API, for jobs that force algorithms with --mca parameters.

Prints one JSON line per rank: which coll component serves each operation, and that every
result matched its reference (an assertion fails the job otherwise).
"""

import json

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
PRIME = 65521


def compose(inmem, inoutmem, datatype):
    """Affine maps ``a << 20 | b`` composed modulo PRIME: associative, not commutative."""
    first = np.frombuffer(inmem, dtype=np.int64)
    then = np.frombuffer(inoutmem, dtype=np.int64)
    a1, b1, a2, b2 = first >> 20, first & 0xFFFFF, then >> 20, then & 0xFFFFF
    then[:] = ((a2 * a1 % PRIME) << 20) | ((a2 * b1 + b2) % PRIME)


def affine(r, count):
    index = np.arange(count, dtype=np.int64)
    return (((index * 5 + r * 11) % (PRIME - 1) + 1) << 20) | ((index * 3 + r * 17 + 1) % PRIME)


COMPOSE = MPI.Op.Create(compose, commute=False)
count = 50_000
comm.Barrier()
out = np.empty(count)
comm.Allreduce(np.full(count, rank + 1.0), out, op=MPI.SUM)
assert np.array_equal(out, np.full(count, size * (size + 1) / 2)), "Allreduce SUM"
ordered = np.empty(count, dtype=np.int64)
comm.Allreduce(affine(rank, count), ordered, op=COMPOSE)
want = affine(0, count)
for r in range(1, size):
    following = affine(r, count)
    compose(want, following, None)  # following = want op following: x0 op x1 op ... in order
    want = following
assert np.array_equal(ordered, want), "Allreduce of a non-commutative operation"
buf = np.arange(count, dtype="d") if rank == 0 else np.zeros(count)
comm.Bcast(buf, root=0)
assert np.array_equal(buf, np.arange(count, dtype="d")), "Bcast"
gathered = np.empty(size * 3, dtype="i")
comm.Allgather(np.full(3, rank, dtype="i"), gathered)
assert np.array_equal(gathered, np.repeat(np.arange(size, dtype="i"), 3)), "Allgather"
table = comm._c.coll
print(
    json.dumps(
        {
            "rank": rank,
            "by": {op: table.provider(op) for op in ("barrier", "bcast", "allreduce", "allgather")},
        }
    ),
    flush=True,
)
