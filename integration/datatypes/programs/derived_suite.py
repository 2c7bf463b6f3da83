"""Every point-to-point and collective form with derived datatypes and strided arrays.

Run by ``integration/datatypes/test_derived.py`` under ``ompy run`` over each transport.  The
buffers of doubles hold their own element index, so a received packed stream *is* the list of
elements the typemap picked, and the expectations are numpy indexing of the same arrays.  Each
rank prints one JSON line: its rank and the names of the checks that passed (a failed check
raises, and ``ompy run`` reports the traceback).
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ompy import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
passed: list[str] = []


def check(name: str, condition: bool) -> None:
    if not condition:
        raise AssertionError(f"rank {rank}: {name}")
    passed.append(name)


# -- the layouts, and which doubles of a buffer each element count picks ----------------------

VECTOR = MPI.DOUBLE.Create_vector(3, 2, 5).Commit()  # 2 of every 5 doubles, 3 times; extent 12
INDEXED = MPI.DOUBLE.Create_indexed([1, 3, 2], [0, 4, 9]).Commit()  # extent 11
SUBARRAY = MPI.DOUBLE.Create_subarray([6, 8], [3, 4], [1, 2]).Commit()  # extent 48
RESIZED = MPI.DOUBLE.Create_vector(2, 1, 3).Create_resized(0, 5 * 8).Commit()  # extent 5
LAYOUTS = {"vector": VECTOR, "indexed": INDEXED, "subarray": SUBARRAY, "resized": RESIZED}


def picks(datatype: MPI.Datatype, count: int) -> np.ndarray:
    """Indices (in doubles) of the data of ``count`` elements, in typemap order (numpy)."""
    if datatype is VECTOR:
        one = np.array([0, 1, 5, 6, 10, 11])
    elif datatype is INDEXED:
        one = np.array([0, 4, 5, 6, 9, 10])
    elif datatype is SUBARRAY:
        one = np.arange(48).reshape(6, 8)[1:4, 2:6].ravel()
    else:
        one = np.array([0, 3])
    stride = datatype.extent // 8
    return (one[None, :] + stride * np.arange(count)[:, None]).ravel()


def source(datatype: MPI.Datatype, count: int, seed: int) -> np.ndarray:
    """A buffer of ``count`` elements whose doubles hold their index plus ``seed`` * 1e6."""
    length = count * datatype.extent // 8 + 48
    return np.arange(length, dtype="d") + seed * 1e6


def landed(datatype: MPI.Datatype, count: int, out: np.ndarray, values: np.ndarray) -> bool:
    """``out`` holds ``values`` at the picked doubles and -1 everywhere else."""
    where = picks(datatype, count)
    rest = np.ones(out.size, bool)
    rest[where] = False
    return np.array_equal(out[where], values) and bool((out[rest] == -1).all())


# Counts on both sides of the eager limits (sm 4 KiB, tcp 64 KiB) and a long rendezvous.
COUNTS = [0, 1, 7, 300, 12_000]

# -- point-to-point -----------------------------------------------------------------------------

for name, datatype in LAYOUTS.items():
    for count in COUNTS:
        data = source(datatype, count, rank)
        expect = source(datatype, count, left)[picks(datatype, count)]
        out = np.full(data.size, -1.0)
        status = MPI.Status()
        request = comm.Irecv([out, count, datatype], left, 1)
        comm.Send([data, count, datatype], right, 1)
        request.Wait(status)
        check(f"send/recv {name} x{count}", landed(datatype, count, out, expect))
        check(f"count {name} x{count}", status.Get_count(datatype) == count)
        check(f"elements {name} x{count}", status.Get_elements(MPI.DOUBLE) == expect.size)

        # Contiguous on one side, the layout on the other (the RGET path reads into pieces).
        packed = np.full(expect.size, -1.0)
        sent = comm.Issend([data, count, datatype], right, 2)
        comm.Recv(packed, left, 2)
        sent.Wait()
        check(f"layout to contiguous {name} x{count}", np.array_equal(packed, expect))
        out[:] = -1
        comm.Sendrecv(data[picks(datatype, count)], right, 3, [out, count, datatype], left, 3)
        check(f"contiguous to layout {name} x{count}", landed(datatype, count, out, expect))

        # To itself (btl self), blocking and nonblocking.
        out[:] = -1
        request = comm.Irecv([out, count, datatype], rank, 4)
        comm.Send([data, count, datatype], rank, 4)
        request.Wait()
        check(f"self {name} x{count}", landed(datatype, count, out, data[picks(datatype, count)]))

# Partial receives: exact counts of whole elements, and of basic elements.
data = source(VECTOR, 5, rank)
out = np.full(data.size, -1.0)
status = MPI.Status()
comm.Sendrecv([data, 3, VECTOR], right, 5, [out, 5, VECTOR], left, 5, status)
check("partial count", status.Get_count(VECTOR) == 3 and status.Get_elements(MPI.DOUBLE) == 18)
comm.Sendrecv(np.arange(7.0), right, 6, [out, 5, VECTOR], left, 6, status)
check("partial elements", status.Get_count(VECTOR) == MPI.UNDEFINED)
check("partial element count", status.Get_elements(VECTOR) == 7)
check("partial values", np.array_equal(out[picks(VECTOR, 2)][:7], np.arange(7.0)))

# Modes and request kinds.
data = source(SUBARRAY, 40, rank)
expect = source(SUBARRAY, 40, left)[picks(SUBARRAY, 40)]
out = np.full(data.size, -1.0)
MPI.Attach_buffer(bytearray(1 << 20))
request = comm.Irecv([out, 40, SUBARRAY], left, 7)
comm.Bsend([data, 40, SUBARRAY], right, 7)
request.Wait()
MPI.Detach_buffer()
check("bsend", landed(SUBARRAY, 40, out, expect))
out[:] = -1
receive = comm.Recv_init([out, 40, SUBARRAY], left, 8)
send = comm.Send_init([data, 40, SUBARRAY], right, 8)
for round_ in range(2):
    out[:] = -1
    MPI.Prequest.Startall([receive, send])
    MPI.Request.Waitall([receive, send])
    check(f"persistent {round_}", landed(SUBARRAY, 40, out, expect))
receive.Free()
send.Free()
out[:] = -1
sent = comm.Isend([data, 40, SUBARRAY], right, 9)
message = comm.Mprobe(left, 9)
message.Recv([out, 40, SUBARRAY])
sent.Wait()
check("mprobe/mrecv", landed(SUBARRAY, 40, out, expect))
replace = source(INDEXED, 30, rank)
comm.Sendrecv_replace([replace, 30, INDEXED], right, 10, left, 10)
picked = picks(INDEXED, 30)
kept = np.ones(replace.size, bool)
kept[picked] = False
check("sendrecv_replace data", np.array_equal(replace[picked], source(INDEXED, 30, left)[picked]))
check("sendrecv_replace gaps", np.array_equal(replace[kept], source(INDEXED, 30, rank)[kept]))

# Strided numpy arrays: no datatype, no copy by the program.
grid = np.arange(60_000.0).reshape(3000, 20) + rank
column = np.full((3000, 20), -1.0)
comm.Sendrecv(grid[:, 7], right, 11, column[:, 3], left, 11)
check(
    "strided column",
    np.array_equal(column[:, 3], (np.arange(60_000.0).reshape(3000, 20) + left)[:, 7]),
)
check("strided column only", bool((np.delete(column, 3, axis=1) == -1).all()))
backwards = np.zeros(30_000)
comm.Sendrecv(grid.ravel()[::-2], right, 12, backwards, left, 12)
check("negative stride", np.array_equal(backwards, (grid.ravel() - rank + left)[::-2]))
block = np.zeros((40, 30))
comm.Sendrecv(grid[100:140, 5:15].T.copy(order="C"), right, 13, block[::1, ::3].T[:10], left, 13)
check(
    "2-d strided receive",
    np.array_equal(block[:, ::3][:, :10].T, (grid - rank + left)[100:140, 5:15].T),
)

# Mixed-kind struct (padding between members): bytes compared.
STRUCT = MPI.Datatype.Create_struct(
    [1, 2, 1], [0, 8, 20], [MPI.DOUBLE, MPI.INT, MPI.SHORT]
).Commit()
raw = np.random.default_rng(rank).integers(0, 256, STRUCT.extent * 500, dtype=np.uint8)
got = np.zeros_like(raw)
comm.Sendrecv([raw, 500, STRUCT], right, 14, [got, 500, STRUCT], left, 14)
theirs = np.random.default_rng(left).integers(0, 256, STRUCT.extent * 500, dtype=np.uint8)
mask = np.zeros(STRUCT.extent, bool)
mask[0:8] = mask[8:16] = mask[20:22] = True
mask = np.tile(mask, 500)
check("struct data", np.array_equal(got[mask], theirs[mask]) and not got[~mask].any())

# -- collectives --------------------------------------------------------------------------------

for name, datatype in LAYOUTS.items():
    for count in (1, 700):
        where = picks(datatype, count)
        data = source(datatype, count, 0)
        buf = data.copy() if rank == 0 else np.full(data.size, -1.0)
        comm.Bcast([buf, count, datatype], root=0)
        check(
            f"bcast {name} x{count}",
            landed(datatype, count, buf, data[where]) if rank else np.array_equal(buf, data),
        )
        mine = source(datatype, count, rank)
        per = datatype.extent // 8 * count
        gathered = np.full(per * size + 48, -1.0)
        comm.Allgather([mine, count, datatype], [gathered, count, datatype])
        ok = all(
            np.array_equal(gathered[r * per + where], source(datatype, count, r)[where])
            for r in range(size)
        )
        check(f"allgather {name} x{count}", ok)
        gathered[:] = -1
        comm.Gather(
            [mine, count, datatype],
            [gathered, count, datatype] if rank == size - 1 else None,
            root=size - 1,
        )
        if rank == size - 1:
            check(
                f"gather {name} x{count}",
                all(
                    np.array_equal(gathered[r * per + where], source(datatype, count, r)[where])
                    for r in range(size)
                ),
            )
        spread = np.arange(per * size + 48, dtype="d")
        piece = np.full(data.size, -1.0)
        comm.Scatter(
            [spread, count, datatype] if rank == 0 else None, [piece, count, datatype], root=0
        )
        check(
            f"scatter {name} x{count}", landed(datatype, count, piece, spread[rank * per + where])
        )
        outgoing = np.arange(per * size + 48, dtype="d") + 1000 * rank
        incoming = np.full(per * size + 48, -1.0)
        comm.Alltoall([outgoing, count, datatype], [incoming, count, datatype])
        check(
            f"alltoall {name} x{count}",
            all(
                np.array_equal(
                    incoming[r * per + where],
                    (np.arange(per * size + 48) + 1000 * r)[rank * per + where],
                )
                for r in range(size)
            ),
        )
        total = np.full(data.size, -1.0)
        comm.Allreduce([mine, count, datatype], [total, count, datatype], MPI.SUM)
        summed = sum(source(datatype, count, r) for r in range(size))[where]
        check(f"allreduce {name} x{count}", landed(datatype, count, total, summed))
        total[:] = -1
        comm.Iallreduce([mine, count, datatype], [total, count, datatype], MPI.MAX).Wait()
        check(
            f"iallreduce {name} x{count}",
            landed(datatype, count, total, source(datatype, count, size - 1)[where]),
        )
        scanned = np.full(data.size, -1.0)
        comm.Scan([mine, count, datatype], [scanned, count, datatype], MPI.SUM)
        check(
            f"scan {name} x{count}",
            landed(
                datatype,
                count,
                scanned,
                sum(source(datatype, count, r) for r in range(rank + 1))[where],
            ),
        )
        rooted = np.full(data.size, -1.0)
        comm.Reduce(
            [mine, count, datatype],
            [rooted, count, datatype] if rank == 2 % size else None,
            MPI.SUM,
            root=2 % size,
        )
        if rank == 2 % size:
            check(f"reduce {name} x{count}", landed(datatype, count, rooted, summed))
        blocks = np.arange(per * size + 48, dtype="d") * (rank + 1)
        mine_block = np.full(data.size, -1.0)
        comm.Reduce_scatter_block([blocks, count, datatype], [mine_block, count, datatype], MPI.SUM)
        factor = size * (size + 1) // 2
        check(
            f"reduce_scatter_block {name} x{count}",
            landed(
                datatype,
                count,
                mine_block,
                (np.arange(per * size + 48) * factor)[rank * per + where],
            ),
        )

# Alltoallw with a different layout per peer, byte displacements.
kinds = [VECTOR, INDEXED, SUBARRAY]
send = np.arange(200.0) + 1000 * rank
recv = np.full(200 * size, -1.0)
send_types = [kinds[(rank + peer) % 3] for peer in range(size)]
recv_types = [kinds[(peer + rank) % 3] for peer in range(size)]
comm.Alltoallw(
    [send, [1] * size, [0] * size, send_types],
    [recv, [1] * size, [1600 * p for p in range(size)], recv_types],
)
check(
    "alltoallw",
    all(
        np.array_equal(
            recv[200 * p + picks(recv_types[p], 1)],
            (np.arange(200.0) + 1000 * p)[picks(recv_types[p], 1)],
        )
        for p in range(size)
    ),
)
covered = np.zeros(recv.size, bool)
for p in range(size):
    covered[200 * p + picks(recv_types[p], 1)] = True
check("alltoallw gaps", bool((recv[~covered] == -1).all()))

# Strided arrays in collectives.
mat = np.arange(40.0).reshape(8, 5) * (rank + 1)
col = np.zeros((8, 3))
comm.Allreduce(mat[:, 4], col[:, 1], MPI.SUM)
check(
    "allreduce strided",
    np.array_equal(col[:, 1], np.arange(40.0).reshape(8, 5)[:, 4] * size * (size + 1) / 2)
    and not col[:, [0, 2]].any(),
)
comm.Bcast(mat[::2, 1] if rank == 0 else col[::2, 2], root=0)
if rank:
    check("bcast strided", np.array_equal(col[::2, 2], np.arange(40.0).reshape(8, 5)[::2, 1]))

# Mixed-kind reductions are an MPI error; pair types reduce.
try:
    comm.Allreduce([np.zeros(24, "u1"), 1, STRUCT], [np.zeros(24, "u1"), 1, STRUCT], MPI.SUM)
except MPI.Exception as error:
    check("mixed reduction refused", error.Get_error_class() == MPI.ERR_OP)
else:
    check("mixed reduction refused", False)
pairs = np.zeros(4, dtype=np.dtype([("v", "d"), ("i", "i")], align=True))
pairs["v"], pairs["i"] = [rank, -rank, 3, 7 - rank], rank
low = np.zeros_like(pairs)
comm.Allreduce([pairs, MPI.DOUBLE_INT], [low, MPI.DOUBLE_INT], MPI.MINLOC)
check(
    "minloc",
    low["v"].tolist() == [0, -(size - 1), 3, 7 - (size - 1)]
    and low["i"].tolist() == [0, size - 1, 0, size - 1],
)

# Bad datatypes.
uncommitted = MPI.DOUBLE.Create_vector(2, 1, 2)
try:
    comm.Send([np.zeros(4), 1, uncommitted], right, 20)
except MPI.Exception as error:
    check("uncommitted refused", error.Get_error_class() == MPI.ERR_TYPE)
else:
    check("uncommitted refused", False)
overlapping = MPI.DOUBLE.Create_hindexed([2, 2], [0, 8]).Commit()
try:
    comm.Recv([np.zeros(4), 1, overlapping], left, 21)
except MPI.Exception as error:
    check("overlapping receive refused", error.Get_error_class() == MPI.ERR_TYPE)
else:
    check("overlapping receive refused", False)

comm.Barrier()
print(json.dumps({"rank": rank, "passed": passed}), flush=True)
sys.exit(0)
