"""Many long messages in flight at once between ring neighbours; prints one JSON report per rank.

Run as ``ompy run -n N python tcp_gets.py``.  Every rank posts receives from its left neighbour
and sends to its right one, 24 messages each from 0 B to 8 MiB, each a slice at an odd offset of
one large buffer (so the RDMA gets land at offsets and in the middle of memory), all outstanding
together; then a 64 MiB exchange in both directions at once.  Payloads are position-dependent,
so a misplaced, short or reordered reply shows.
"""

import json

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
SIZES = [0, 1, 65_537, 300_000, 1 << 20, (3 << 20) + 7, 8 << 20, 70_000] * 3


def pattern(nbytes, seed):
    block = np.random.default_rng(seed).integers(0, 256, 4099, dtype=np.uint8)
    return np.resize(block, nbytes)


def layout(sizes):
    """Offsets of each message in one buffer, each starting at an odd position."""
    offsets, position = [], 3
    for nbytes in sizes:
        offsets.append(position)
        position += nbytes + 5
    return offsets, position


offsets, total = layout(SIZES)
outgoing = np.zeros(total, dtype=np.uint8)
incoming = np.zeros(total, dtype=np.uint8)
for number, (offset, nbytes) in enumerate(zip(offsets, SIZES, strict=True)):
    outgoing[offset : offset + nbytes] = pattern(nbytes, rank * 1000 + number)
requests = [
    comm.Irecv(incoming[offset : offset + nbytes], source=left, tag=number)
    for number, (offset, nbytes) in enumerate(zip(offsets, SIZES, strict=True))
]
requests += [
    comm.Isend(outgoing[offset : offset + nbytes], dest=right, tag=number)
    for number, (offset, nbytes) in enumerate(zip(offsets, SIZES, strict=True))
]
MPI.Request.Waitall(requests)
for number, (offset, nbytes) in enumerate(zip(offsets, SIZES, strict=True)):
    expected = pattern(nbytes, left * 1000 + number)
    if not np.array_equal(incoming[offset : offset + nbytes], expected):
        raise AssertionError(f"rank {rank}: message {number} ({nbytes} B) from {left} corrupt")
    gap = incoming[offset + nbytes : offset + nbytes + 5]
    if gap.any():
        raise AssertionError(f"rank {rank}: message {number} wrote past its end")

big = 64 << 20
mine = pattern(big, 77 + rank)
theirs = np.zeros(big, dtype=np.uint8)
MPI.Request.Waitall([comm.Irecv(theirs, source=left, tag=99), comm.Isend(mine, dest=right, tag=99)])
if not np.array_equal(theirs, pattern(big, 77 + left)):
    raise AssertionError(f"rank {rank}: the 64 MiB message from {left} is corrupt")
comm.Barrier()
print(json.dumps({"rank": rank, "messages": len(SIZES) + 1}), flush=True)
