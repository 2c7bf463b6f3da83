"""A mixed job: one rank presents big-endian data, the others this machine's little-endian.

Run by ``integration/datatypes/test_heterogeneous.py`` with
``--mca opal_arch_byteorder big --mca opal_arch_byteorder_ranks 1``.  Every rank exchanges every
predefined datatype it can hold and several derived ones with every other rank, point to point
and through collectives; values must arrive as they were sent (the receiver converts).  The raw
bytes of an untyped receive from rank 1 prove that it really sends big-endian data.  Each rank
prints one JSON line with the checks that passed.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
BIG = 1
passed: list[str] = []


def check(name: str, condition: bool) -> None:
    if not condition:
        raise AssertionError(f"rank {rank}: {name}")
    passed.append(name)


def values(dtype: np.dtype, count: int, seed: int) -> np.ndarray:
    """Distinct values of ``dtype`` that survive a byte swap only if converted right."""
    numbers = np.arange(count, dtype=np.int64) * 7919 + seed * 131 + 3
    if dtype.kind == "b":
        return (numbers % 3 == 0).astype(dtype)
    if dtype.kind in "iu":
        top = min(int(np.iinfo(dtype).max), 2**62)
        return (numbers % (top - 1) + 1).astype(dtype)
    if dtype.kind == "c":
        return (numbers * 0.25 + 1j * numbers).astype(dtype)
    if dtype.kind == "f":
        return ((numbers % 1000) * 0.5 + 0.125).astype(dtype)
    if dtype.kind == "S":
        return np.array([bytes([65 + n % 26]) for n in numbers], dtype=dtype)
    if dtype.kind == "U":
        return np.array([chr(0x3B1 + n % 20) for n in numbers], dtype=dtype)
    raise TypeError(dtype)


# Every predefined datatype with a plain numpy dtype of its own (pairs are checked below).
PREDEFINED = []
for key in dir(MPI):
    datatype = getattr(MPI, key)
    if not isinstance(datatype, MPI.Datatype) or datatype == MPI.DATATYPE_NULL:
        continue
    try:
        code = datatype.tocode()
        dtype = np.dtype("U1" if code == "U" else code)  # wchar_t: one UCS-4 character
    except (ValueError, TypeError, MPI.Exception):
        continue
    if dtype.fields is None and dtype.itemsize == datatype.Get_size() and dtype.kind in "biufcSU":
        PREDEFINED.append((key, datatype, dtype))
check("some predefined types", len(PREDEFINED) > 20)

# -- point-to-point: every predefined type, eager and rendezvous, to and from every rank ---------

for key, datatype, dtype in PREDEFINED:
    for count in (3, 20_000):
        requests, inbox = [], {}
        for peer in range(size):
            if peer == rank:
                continue
            inbox[peer] = np.zeros(count, dtype)
            requests.append(comm.Irecv([inbox[peer], datatype], peer, 7))
        for peer in range(size):
            if peer != rank:
                requests.append(comm.Isend([values(dtype, count, rank), datatype], peer, 7))
        MPI.Request.Waitall(requests)
        check(
            f"p2p {key} x{count}",
            all(np.array_equal(inbox[p], values(dtype, count, p)) for p in inbox),
        )

# The simulated rank's data really is big-endian on the wire.
if rank == BIG:
    comm.Send(np.array([1.5, 2.5]), 0, 8)
    comm.Send(np.array([258], dtype="i4"), 0, 9)
elif rank == 0:
    raw = np.zeros(16, np.uint8)
    comm.Recv([raw, MPI.BYTE], BIG, 8)
    check("wire doubles are big-endian", raw.tobytes() == np.array([1.5, 2.5], ">f8").tobytes())
    comm.Recv([raw, 4, MPI.BYTE], BIG, 9)
    check("wire ints are big-endian", raw[:4].tobytes() == b"\x00\x00\x01\x02")

# Pickled objects are never converted.
got = comm.sendrecv(
    {"from": rank, "a": np.arange(3.0) + rank}, (rank + 1) % size, 10, None, (rank - 1) % size, 10
)
check(
    "objects",
    got["from"] == (rank - 1) % size
    and np.array_equal(got["a"], np.arange(3.0) + (rank - 1) % size),
)

# -- derived datatypes ---------------------------------------------------------------------------

VECTOR = MPI.INT.Create_vector(4, 1, 3).Commit()
STRUCT = MPI.Datatype.Create_struct(
    [1, 2, 1], [0, 8, 16], [MPI.DOUBLE, MPI.SHORT, MPI.INT64_T]
).Commit()
SUBARRAY = MPI.FLOAT.Create_subarray([5, 6], [2, 3], [1, 2]).Commit()
record = np.dtype(
    {
        "names": ["d", "s", "q"],
        "formats": ["f8", "(2,)i2", "i8"],
        "offsets": [0, 8, 16],
        "itemsize": 24,
    }
)


def records(count: int, seed: int) -> np.ndarray:
    out = np.zeros(count, record)
    out["d"] = np.arange(count) * 1.25 + seed
    out["s"] = (np.arange(2 * count).reshape(count, 2) + 100 * seed) % 30000
    out["q"] = np.arange(count, dtype=np.int64) * 10**12 + seed
    return out


def _all_records(count: int, ranks: int) -> np.ndarray:
    """``count`` records for each rank (seeds 10, 11, ...), in one array of the padded dtype."""
    out = np.zeros(count * ranks, record)
    for r in range(ranks):
        out[count * r : count * (r + 1)] = records(count, 10 + r)
    return out


right, left = (rank + 1) % size, (rank - 1) % size
for count in (2, 5000):
    ints = np.arange(12 * count, dtype="i") + 1000 * rank
    out = np.full(12 * count, -1, "i")
    comm.Sendrecv([ints, count, VECTOR], right, 11, [out, count, VECTOR], left, 11)
    where = (np.arange(4)[None, :] * 3 + 10 * np.arange(count)[:, None]).ravel()
    check(
        f"vector x{count}",
        np.array_equal(out[where], (np.arange(12 * count) + 1000 * left)[where].astype("i")),
    )
    mine = records(count, rank)
    theirs = np.zeros(count, record)
    comm.Sendrecv([mine, count, STRUCT], right, 12, [theirs, count, STRUCT], left, 12)
    check(f"struct x{count}", theirs.tobytes() == records(count, left).tobytes())
    grid = np.arange(30 * count, dtype="f") + rank
    got = np.zeros(30 * count, "f")
    comm.Sendrecv([grid, count, SUBARRAY], right, 13, [got, count, SUBARRAY], left, 13)
    inner = np.zeros((count, 5, 6), bool)
    inner[:, 1:3, 2:5] = True
    check(
        f"subarray x{count}",
        np.array_equal(
            got[inner.ravel()], (np.arange(30 * count, dtype="f") + left)[inner.ravel()]
        ),
    )

column = np.zeros((100, 4))
comm.Sendrecv((np.arange(400.0).reshape(100, 4) + rank)[:, 2], right, 14, column[:, 1], left, 14)
check(
    "strided column", np.array_equal(column[:, 1], (np.arange(400.0).reshape(100, 4) + left)[:, 2])
)
status = MPI.Status()
comm.Sendrecv(
    [np.arange(30, dtype="i"), 2, VECTOR],
    right,
    15,
    [np.zeros(60, "i"), 5, VECTOR],
    left,
    15,
    status,
)
check("partial receive", status.Get_count(VECTOR) == 2 and status.Get_elements(MPI.INT) == 8)

# -- collectives ---------------------------------------------------------------------------------

#: C integer and floating types (SUM is defined on them; not on logical or byte types).
REDUCIBLE = {
    "SHORT",
    "INT",
    "LONG",
    "LONG_LONG",
    "UNSIGNED_SHORT",
    "UNSIGNED",
    "UNSIGNED_LONG",
    "UNSIGNED_LONG_LONG",
    "INT8_T",
    "INT16_T",
    "INT32_T",
    "INT64_T",
    "UINT8_T",
    "UINT16_T",
    "UINT32_T",
    "UINT64_T",
    "FLOAT",
    "DOUBLE",
    "SIGNED_CHAR",
    "UNSIGNED_CHAR",
}
for key, datatype, dtype in PREDEFINED:
    data = values(dtype, 50, 0) if rank == BIG else np.zeros(50, dtype)
    comm.Bcast([data, datatype], root=BIG)
    ok = np.array_equal(data, values(dtype, 50, 0))
    gathered = np.zeros(50 * size, dtype)
    comm.Allgather([values(dtype, 50, rank), datatype], [gathered, datatype])
    ok = ok and all(
        np.array_equal(gathered[50 * r : 50 * r + 50], values(dtype, 50, r)) for r in range(size)
    )
    swapped = np.zeros(10 * size, dtype)
    comm.Alltoall(
        [np.concatenate([values(dtype, 10, rank * size + r) for r in range(size)]), datatype],
        [swapped, datatype],
    )
    ok = ok and all(
        np.array_equal(swapped[10 * r : 10 * r + 10], values(dtype, 10, r * size + rank))
        for r in range(size)
    )
    check(f"collectives {key}", ok)
    if dtype.kind in "iuf" and key in REDUCIBLE:
        total = np.zeros(20, dtype)
        comm.Allreduce([np.arange(20).astype(dtype), datatype], [total, datatype], MPI.SUM)
        check(f"allreduce {key}", np.array_equal(total, (np.arange(20) * size).astype(dtype)))

vec = np.arange(12 * 6, dtype="i") * (rank + 1)
summed = np.full(12 * 6, -1, "i")
comm.Allreduce([vec, 6, VECTOR], [summed, 6, VECTOR], MPI.SUM)
where = (np.arange(4)[None, :] * 3 + 10 * np.arange(6)[:, None]).ravel()
check(
    "allreduce vector",
    np.array_equal(summed[where], (np.arange(72) * size * (size + 1) // 2)[where].astype("i")),
)
scan = np.zeros(8)
comm.Iscan(np.full(8, rank + 1.0), scan, MPI.PROD).Wait()
check("iscan", np.array_equal(scan, np.full(8, float(np.prod(np.arange(1, rank + 2))))))
exscan = np.full(3, -1, "i8")
comm.Exscan(np.full(3, 2**40 + rank, "i8"), exscan, MPI.SUM)
check(
    "exscan",
    (rank == 0 and (exscan == -1).all())
    or np.array_equal(exscan, np.full(3, sum(2**40 + r for r in range(rank)), "i8")),
)
part = np.zeros(2, "i2")
comm.Reduce_scatter(np.arange(2 * size, dtype="i2") + rank, part, [2] * size, MPI.MAX)
check(
    "reduce_scatter", np.array_equal(part, np.arange(2 * rank, 2 * rank + 2, dtype="i2") + size - 1)
)
structs = np.zeros(3 * size, record)
comm.Gather([records(3, rank), 3, STRUCT], [structs, 3, STRUCT] if rank == 0 else None, root=0)
if rank == 0:
    check(
        "gather struct",
        all(structs[3 * r : 3 * r + 3].tobytes() == records(3, r).tobytes() for r in range(size)),
    )
scattered = np.zeros(3, record)
comm.Scatter(
    [_all_records(3, size), 3, STRUCT] if rank == BIG else None,
    [scattered, 3, STRUCT],
    root=BIG,
)
check("scatter struct", scattered.tobytes() == records(3, 10 + rank).tobytes())
pairs = np.zeros(2, dtype=np.dtype([("v", "d"), ("i", "i")], align=True))
pairs["v"], pairs["i"] = [rank, -rank], rank
best = np.zeros_like(pairs)
comm.Allreduce([pairs, MPI.DOUBLE_INT], [best, MPI.DOUBLE_INT], MPI.MAXLOC)
check("maxloc", best["v"].tolist() == [size - 1, 0] and best["i"].tolist() == [size - 1, 0])

# In place, vector forms and nonblocking ones.
inplace = np.arange(4.0) * (rank + 1)
comm.Allreduce(MPI.IN_PLACE, inplace, MPI.SUM)
check("allreduce in place", np.array_equal(inplace, np.arange(4.0) * size * (size + 1) / 2))
spread = np.arange(2.0 * size) * (rank + 1)
comm.Reduce_scatter_block(MPI.IN_PLACE, spread, MPI.SUM)
check(
    "reduce_scatter_block in place",
    np.array_equal(
        spread[:2], np.arange(2.0 * size)[2 * rank : 2 * rank + 2] * size * (size + 1) / 2
    ),
)
counts, displs = list(range(1, size + 1)), [sum(range(1, r + 1)) for r in range(size)]
gathered = np.zeros(sum(counts), "i8")
comm.Gatherv(
    np.full(counts[rank], rank + 100, "i8"),
    [gathered, (counts, displs), MPI.INT64_T] if rank == BIG else None,
    root=BIG,
)
if rank == BIG:
    check("gatherv", gathered.tolist() == [r + 100 for r in range(size) for _ in range(r + 1)])
piece = np.zeros(counts[rank], "f")
whole = np.arange(sum(counts), dtype="f")
comm.Scatterv([whole, (counts, displs), MPI.FLOAT] if rank == BIG else None, piece, root=BIG)
check("scatterv", piece.tolist() == whole[displs[rank] : displs[rank] + counts[rank]].tolist())
inbox = np.zeros(size, "d")
comm.Alltoallv(
    [np.arange(size, dtype="d") + 10 * rank, ([1] * size, list(range(size))), MPI.DOUBLE],
    [inbox, ([1] * size, list(range(size))), MPI.DOUBLE],
)
check("alltoallv", inbox.tolist() == [rank + 10 * r for r in range(size)])
table = np.zeros(size, "i2")
table[rank] = rank + 7
comm.Allgather(MPI.IN_PLACE, table)
check("allgather in place", table.tolist() == [r + 7 for r in range(size)])
broadcast = np.arange(5, dtype="u4") if rank == 2 % size else np.zeros(5, "u4")
comm.Ibcast(broadcast, root=2 % size).Wait()
check("ibcast", broadcast.tolist() == list(range(5)))

comm.Barrier()
print(json.dumps({"rank": rank, "passed": passed}), flush=True)
sys.exit(0)
