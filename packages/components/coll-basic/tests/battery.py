"""Every collective of the MPI API checked against a numpy (or plain Python) reference.

``run_battery(comm)`` runs on every member of ``comm`` (an ``Intracomm``) and raises
``AssertionError`` naming the collective, the size and the case on the first wrong result.  Each
rank's contribution is a function of its rank, so every rank can compute the expected result of
every collective by itself.  The same battery runs in-process over the loopback PML (this
package's tests, 1 to 9 ranks) and in real processes through ``ompy run`` (``integration/coll``):
it tests whichever coll components serve the communicator.

Reductions sample MPI's operation x datatype matrix: every allowed pair goes through
``Allreduce``, and each pair also through one of the other reductions in rotation, so every
reduction sees every operation over a few sizes; the op framework's own tests cover the kernels
exhaustively.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ompy.ompi.api.request import Request
from ompy.ompi.constants import IN_PLACE
from ompy.ompi.datatype import predefined as types
from ompy.ompi.mca.op import Intrinsic
from ompy.ompi.mca.op.base import allowed
from ompy.ompi.op import (
    BAND,
    BOR,
    BXOR,
    LAND,
    LOR,
    LXOR,
    MAX,
    MAXLOC,
    MIN,
    MINLOC,
    PROD,
    SUM,
    Op,
)

UFUNCS = {
    "SUM": np.add,
    "PROD": np.multiply,
    "MAX": np.maximum,
    "MIN": np.minimum,
    "LAND": np.logical_and,
    "LOR": np.logical_or,
    "LXOR": np.logical_xor,
    "BAND": np.bitwise_and,
    "BOR": np.bitwise_or,
    "BXOR": np.bitwise_xor,
}
OPS = [SUM, PROD, MAX, MIN, LAND, LOR, LXOR, BAND, BOR, BXOR]
DTYPES = ["b", "h", "i", "q", "B", "H", "I", "Q", "f", "d", "F", "D", "?"]
COUNTS = [0, 1, 7]


def data(rank: int, count: int, dtype: str, salt: int = 0) -> np.ndarray:
    """Rank ``rank``'s contribution: small values (exact sums), a pattern that varies."""
    index = np.arange(count)
    if dtype == "?":
        return (index + rank + salt) % 3 == 0
    values = (index * 7 + rank * 3 + salt) % 5 + 1
    if dtype in "FD":
        return (values + 1j * ((index + rank) % 3)).astype(dtype)
    return values.astype(dtype)


def fold(op_name: str, arrays: list[np.ndarray]) -> np.ndarray:
    """``x0 op x1 op ... op xk`` with numpy, kept in the arrays' dtype."""
    result = arrays[0].copy()
    for array in arrays[1:]:
        result = UFUNCS[op_name](result, array).astype(result.dtype)
    return result


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    exact = got.dtype.kind not in "fc"
    ok = np.array_equal(got, want) if exact else np.allclose(got, want, rtol=1e-5)
    check(bool(ok), f"{what}: got {got!r}, want {want!r}")


# -- rooted and data-movement collectives -------------------------------------------------------


def check_barrier_and_bcast(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    comm.Barrier()
    comm.barrier()
    for root, count in itertools.product(range(size), COUNTS):
        buf = data(root, count, "d") if rank == root else np.zeros(count)
        comm.Bcast(buf, root=root)
        same(buf, data(root, count, "d"), f"Bcast root={root} count={count} size={size}")
    buf = np.zeros(6, "i")
    if rank == size - 1:
        buf[:] = np.arange(6)
    comm.Bcast([buf, 3, types.INT], root=size - 1)  # an explicit count: only 3 elements move
    want = np.arange(6) if rank == size - 1 else np.array([0, 1, 2, 0, 0, 0])
    same(buf, want, "Bcast of [buf, 3, INT]")


def check_gather_scatter(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    for root, count in itertools.product(range(size), COUNTS):
        recv = np.full(size * count, -1, "i") if rank == root else None
        comm.Gather(data(rank, count, "i"), recv, root=root)
        if rank == root:
            want = np.concatenate([data(k, count, "i") for k in range(size)])
            same(recv, want, f"Gather root={root} count={count} size={size}")
        send = (
            np.concatenate([data(k, count, "q", 1) for k in range(size)]) if rank == root else None
        )
        mine = np.full(count, -1, "q")
        comm.Scatter(send, mine, root=root)
        same(mine, data(rank, count, "q", 1), f"Scatter root={root} count={count}")
    root = size // 2
    # IN_PLACE at the root; [buf, count, datatype] with the count per block.
    recv = np.full(2 * size + 3, -1, "i")
    if rank == root:
        recv[2 * root : 2 * root + 2] = data(root, 2, "i")
        comm.Gather(IN_PLACE, [recv, 2, types.INT], root=root)
        want = np.concatenate([data(k, 2, "i") for k in range(size)])
        same(recv[: 2 * size], want, "Gather IN_PLACE")
        check((recv[2 * size :] == -1).all(), "Gather wrote past its blocks")
    else:
        comm.Gather(data(rank, 2, "i"), None, root=root)
    send = np.concatenate([data(k, 3, "d") for k in range(size)])
    if rank == root:
        kept = send[3 * root : 3 * root + 3].copy()
        comm.Scatter(send, IN_PLACE, root=root)
        same(send[3 * root : 3 * root + 3], kept, "Scatter IN_PLACE keeps the root's block")
    else:
        mine = np.empty(3)
        comm.Scatter(None, mine, root=root)
        same(mine, data(rank, 3, "d"), "Scatter to a non-root")


def vector_counts(size: int) -> list[int]:
    """Block sizes with zeros and uneven lengths."""
    return [(k * 2 + 1) % 4 for k in range(size)]


def check_vector_forms(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    counts = vector_counts(size)
    displs = [sum(counts[:k]) + k for k in range(size)]  # gaps of one element between blocks
    total = displs[-1] + counts[-1] + 1
    for root in {0, size - 1}:
        recv = np.full(total, -1, "d") if rank == root else None
        comm.Gatherv(data(rank, counts[rank], "d"), [recv, (counts, displs), types.DOUBLE], root)
        if rank == root:
            for k in range(size):
                block = recv[displs[k] : displs[k] + counts[k]]
                same(block, data(k, counts[k], "d"), f"Gatherv block {k} root={root}")
            gaps = np.ones(total, bool)
            for k in range(size):
                gaps[displs[k] : displs[k] + counts[k]] = False
            check((recv[gaps] == -1).all(), "Gatherv wrote into the gaps")
        send = np.zeros(total, "i")
        for k in range(size):
            send[displs[k] : displs[k] + counts[k]] = data(k, counts[k], "i", 2)
        mine = np.full(counts[rank], -1, "i")
        comm.Scatterv([send, counts, displs, types.INT] if rank == root else None, mine, root)
        same(mine, data(rank, counts[rank], "i", 2), f"Scatterv root={root}")
    recv = np.full(total, -1, "q")
    comm.Allgatherv(data(rank, counts[rank], "q"), [recv, (counts, displs), types.LONG_LONG])
    for k in range(size):
        same(recv[displs[k] : displs[k] + counts[k]], data(k, counts[k], "q"), "Allgatherv")
    inplace = np.full(total, -1, "q")
    inplace[displs[rank] : displs[rank] + counts[rank]] = data(rank, counts[rank], "q")
    comm.Allgatherv(IN_PLACE, [inplace, (counts, displs), types.LONG_LONG])
    same(inplace, recv, "Allgatherv IN_PLACE")
    # Alltoallv: rank r sends (r + k) % 3 elements to rank k.
    sendcounts = [(rank + k) % 3 for k in range(size)]
    recvcounts = [(k + rank) % 3 for k in range(size)]
    sendbuf = np.concatenate([data(rank * size + k, sendcounts[k], "h") for k in range(size)])
    recvbuf = np.full(sum(recvcounts), -1, "h")
    comm.Alltoallv([sendbuf, sendcounts], [recvbuf, recvcounts])
    want = np.concatenate([data(k * size + rank, recvcounts[k], "h") for k in range(size)])
    same(recvbuf, want, "Alltoallv")
    symmetric = [1 + (rank + k) % 2 for k in range(size)]  # IN_PLACE needs equal counts
    inplace = np.concatenate([data(rank * size + k, symmetric[k], "h") for k in range(size)])
    comm.Alltoallv(IN_PLACE, [inplace, symmetric])
    want = np.concatenate([data(k * size + rank, symmetric[k], "h") for k in range(size)])
    same(inplace, want, "Alltoallv IN_PLACE")


def uneven(total: int, size: int) -> tuple[list[int], list[int]]:
    """mpi4py's split of ``total`` elements without counts: the remainder on the first ranks."""
    counts = [total // size + (k < total % size) for k in range(size)]
    return counts, [sum(counts[:k]) for k in range(size)]


def check_mpi4py_vector_forms(comm: Any) -> None:
    """Vector messages without counts (uneven split), with one count, and a stride for displs."""
    rank, size = comm.Get_rank(), comm.Get_size()
    total = 2 * size + 1 if size > 1 else 3  # never a multiple of the size (beyond 1 rank)
    counts, displs = uneven(total, size)
    whole = data(7, total, "d")
    for root in sorted({0, size - 1}):
        mine = np.full(counts[rank], -1.0)
        comm.Scatterv(whole if rank == root else None, mine, root)
        same(mine, whole[displs[rank] : displs[rank] + counts[rank]], f"Scatterv(buf) {root=}")
        mine = np.full(counts[rank], -1.0)
        comm.Scatterv([whole, types.DOUBLE] if rank == root else None, mine, root)
        same(mine, whole[displs[rank] : displs[rank] + counts[rank]], "Scatterv([buf, DOUBLE])")
        gathered = np.full(total, -1.0) if rank == root else None
        comm.Gatherv(whole[displs[rank] : displs[rank] + counts[rank]], gathered, root)
        if rank == root:
            same(gathered, whole, f"Gatherv into a bare buffer {root=}")
    everyone = np.full(total, -1.0)
    comm.Allgatherv(whole[displs[rank] : displs[rank] + counts[rank]], [everyone, types.DOUBLE])
    same(everyone, whole, "Allgatherv into [buf, DOUBLE]")
    # One count for every rank, blocks `stride` elements apart (gaps stay untouched).
    stride = 3
    strided = np.full(size * stride, -1, "i")
    comm.Allgatherv(data(rank, 2, "i"), [strided, 2, stride, types.INT])
    want = np.full(size * stride, -1, "i")
    for k in range(size):
        want[k * stride : k * stride + 2] = data(k, 2, "i")
    same(strided, want, "Allgatherv([buf, 2, stride, INT])")
    gathered = np.full(size * stride, -1, "i")
    comm.Gatherv(data(rank, 2, "i"), [gathered, (2, stride), types.INT], root=0)
    if rank == 0:
        same(gathered, want, "Gatherv([buf, (2, stride), INT])")
    mine = np.full(2, -1, "i")
    comm.Scatterv([want, ([2] * size, stride), types.INT], mine, root=size - 1)
    same(mine, data(rank, 2, "i"), "Scatterv([buf, (counts, stride), INT])")
    # Alltoallv without counts: each side split unevenly the same way.
    sendcounts, senddispls = uneven(total, size)
    outgoing = data(rank, total, "q")
    incoming = np.full(sendcounts[rank] * size, -1, "q")
    comm.Alltoallv(outgoing, incoming)
    want = np.concatenate(
        [
            data(k, total, "q")[senddispls[rank] : senddispls[rank] + sendcounts[rank]]
            for k in range(size)
        ]
    )
    same(incoming, want, "Alltoallv of bare buffers")
    try:
        comm.Allgatherv(data(rank, 1, "d"), [np.zeros(4), (1, 2, 3), types.DOUBLE])
    except ValueError as error:
        check("(counts, displs) pair" in str(error), str(error))
        check("Comm.Allgatherv: recvbuf" in str(error), str(error))
    else:
        raise AssertionError("a tuple of three counts was accepted as a (counts, displs) pair")


def check_allgather_alltoall(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    for count in COUNTS:
        recv = np.full(size * count, -1, "f")
        comm.Allgather(data(rank, count, "f"), recv)
        want = np.concatenate([data(k, count, "f") for k in range(size)])
        same(recv, want, f"Allgather count={count}")
        inplace = np.zeros(size * count, "f")
        inplace[rank * count : (rank + 1) * count] = data(rank, count, "f")
        comm.Allgather(IN_PLACE, inplace)
        same(inplace, want, f"Allgather IN_PLACE count={count}")
        send = np.concatenate([data(rank * size + k, count, "I") for k in range(size)])
        recv = np.full(size * count, 7, "I")
        comm.Alltoall(send, recv)
        want = np.concatenate([data(k * size + rank, count, "I") for k in range(size)])
        same(recv, want, f"Alltoall count={count}")
        comm.Alltoall(IN_PLACE, send)
        same(send, want, f"Alltoall IN_PLACE count={count}")


def check_alltoallw(comm: Any) -> None:
    """Mixed datatypes and byte displacements: rank r sends k+1 elements of a per-peer type."""
    rank, size = comm.Get_rank(), comm.Get_size()
    kinds = [(types.INT, "i"), (types.DOUBLE, "d"), (types.SHORT, "h")]

    def layout(counts_of: Any, kind_of: Any) -> tuple[list[int], list[int], list[Any], int]:
        counts, displs, datatypes, offset = [], [], [], 0
        for k in range(size):
            datatype = kinds[kind_of(k)][0]
            counts.append(counts_of(k))
            displs.append(offset)
            datatypes.append(datatype)
            offset += counts[-1] * datatype.extent + 8  # padding between blocks
        return counts, displs, datatypes, offset

    # What rank r sends to rank k is of kind k % 3, so everything rank r receives is of kind r % 3.
    scounts, sdispls, stypes, snbytes = layout(lambda k: (rank + k) % 3, lambda k: k % 3)
    rcounts, rdispls, rtypes, rnbytes = layout(lambda k: (k + rank) % 3, lambda k: rank % 3)
    sendbuf = np.zeros(snbytes, np.uint8)
    for k in range(size):
        code = kinds[k % 3][1]
        block = data(rank * size + k, scounts[k], code).view(np.uint8)
        sendbuf[sdispls[k] : sdispls[k] + block.nbytes] = block
    recvbuf = np.zeros(rnbytes, np.uint8)
    comm.Alltoallw([sendbuf, (scounts, sdispls), stypes], [recvbuf, rcounts, rdispls, rtypes])
    code = kinds[rank % 3][1]
    for k in range(size):
        nbytes = rcounts[k] * np.dtype(code).itemsize
        got = recvbuf[rdispls[k] : rdispls[k] + nbytes].view(code)
        same(got, data(k * size + rank, rcounts[k], code), f"Alltoallw from {k}")


# -- reductions ----------------------------------------------------------------------------------


def check_reductions(comm: Any) -> None:
    """Every allowed (op, datatype) pair through Allreduce and one other reduction each."""
    rank, size = comm.Get_rank(), comm.Get_size()
    pairs = [
        (op, code)
        for op in OPS
        for code in DTYPES
        if allowed(Intrinsic[op._impl.name], types.TYPECHARS[code])
    ]
    for index, (op, code) in enumerate(pairs):
        name = op._impl.name
        count = COUNTS[index % len(COUNTS)] + 1
        contributions = [data(k, count, code, index) for k in range(size)]
        mine = contributions[rank]
        what = f"{name} on {code} (count {count}, size {size})"
        out = np.empty(count, code)
        comm.Allreduce(mine, out, op)
        same(out, fold(name, contributions), f"Allreduce {what}")
        form = index % 5
        if form == 0:
            root = index % size
            out = np.empty(count, code) if rank == root else None
            comm.Reduce(mine, out, op, root)
            if rank == root:
                same(out, fold(name, contributions), f"Reduce root={root} {what}")
        elif form == 1:
            out = np.empty(count, code)
            comm.Scan(mine, out, op)
            same(out, fold(name, contributions[: rank + 1]), f"Scan {what}")
        elif form == 2:
            out = mine.copy()
            comm.Exscan(IN_PLACE, out, op)
            if rank > 0:
                same(out, fold(name, contributions[:rank]), f"Exscan IN_PLACE {what}")
        elif form == 3:
            whole = [data(k, count * size, code, index) for k in range(size)]
            out = np.empty(count, code)
            comm.Reduce_scatter_block(whole[rank], out, op)
            want = fold(name, whole)[rank * count : (rank + 1) * count]
            same(out, want, f"Reduce_scatter_block {what}")
        else:
            out = mine.copy()
            comm.Iallreduce(IN_PLACE, out, op).Wait()
            same(out, fold(name, contributions), f"Iallreduce IN_PLACE {what}")


def check_reduction_forms(comm: Any) -> None:
    """IN_PLACE, count 0, Reduce_scatter with and without counts, MAXLOC/MINLOC."""
    rank, size = comm.Get_rank(), comm.Get_size()
    contributions = [data(k, 4, "d") for k in range(size)]
    for root in range(size):
        out = contributions[rank].copy()
        if rank == root:
            comm.Reduce(IN_PLACE, out, SUM, root)
            same(out, fold("SUM", contributions), f"Reduce IN_PLACE root={root}")
        else:
            comm.Reduce(out, None, SUM, root)
    out = contributions[rank].copy()
    comm.Allreduce(IN_PLACE, out, MAX)
    same(out, fold("MAX", contributions), "Allreduce IN_PLACE MAX")
    empty = np.empty(0, "i")
    comm.Allreduce(np.empty(0, "i"), empty, SUM)
    comm.Scan(np.empty(0, "i"), empty)
    out = contributions[rank].copy()
    comm.Scan(IN_PLACE, out)
    same(out, fold("SUM", contributions[: rank + 1]), "Scan IN_PLACE")
    marker = np.full(4, -5.0)
    comm.Exscan(contributions[rank], marker)
    if rank == 0:
        same(marker, np.full(4, -5.0), "Exscan leaves rank 0's buffer alone")
    else:
        same(marker, fold("SUM", contributions[:rank]), "Exscan")
    counts = vector_counts(size)
    whole = [data(k, sum(counts), "q") for k in range(size)]
    start = sum(counts[:rank])
    want = fold("SUM", whole)[start : start + counts[rank]]
    out = np.empty(counts[rank], "q")
    comm.Reduce_scatter(whole[rank], out, counts)
    same(out, want, "Reduce_scatter with counts")
    out = np.empty(counts[rank], "q")
    comm.Reduce_scatter(whole[rank], out)  # the counts are agreed on by the ranks
    same(out, want, "Reduce_scatter without counts")
    inplace = whole[rank].copy()
    comm.Reduce_scatter(IN_PLACE, inplace, counts, SUM)
    same(inplace[: counts[rank]], want, "Reduce_scatter IN_PLACE")
    inplace = data(rank, 2 * size, "d")
    comm.Reduce_scatter_block(IN_PLACE, inplace, SUM)
    total = fold("SUM", [data(k, 2 * size, "d") for k in range(size)])
    same(inplace[:2], total[2 * rank : 2 * rank + 2], "Reduce_scatter_block IN_PLACE")
    pairs = np.zeros(3, dtype=types.DOUBLE_INT.dtype)
    pairs["value"] = [rank % 3, -rank, 1.0]
    pairs["index"] = rank
    for op, pick in ((MAXLOC, max), (MINLOC, min)):
        out = np.zeros(3, dtype=types.DOUBLE_INT.dtype)
        comm.Allreduce(pairs, out, op)
        for slot, values in enumerate(([k % 3 for k in range(size)], [-k for k in range(size)])):
            best = pick(values)
            check(out["value"][slot] == best, f"{op} value in slot {slot}")
            check(out["index"][slot] == values.index(best), f"{op} lowest index in slot {slot}")
        check(out["index"][2] == 0, f"{op}: ties go to the lowest index")


def matmul_op() -> Op:
    """A non-commutative, associative operation: 2x2 integer matrix products."""

    def multiply(inmem: Any, inoutmem: Any, datatype: Any) -> None:
        left = np.frombuffer(inmem, "q").reshape(-1, 2, 2)
        right = np.frombuffer(inoutmem, "q").reshape(-1, 2, 2)
        right[...] = np.matmul(left, right) % 1009

    return Op.Create(multiply, commute=False)


def matrices(rank: int, blocks: int) -> np.ndarray:
    values = [[[1, rank + b], [rank % 3, 1 + b]] for b in range(blocks)]
    return np.array(values, "q").reshape(-1)


def product(arrays: list[np.ndarray]) -> np.ndarray:
    result = arrays[0].reshape(-1, 2, 2)
    for array in arrays[1:]:
        result = np.matmul(result, array.reshape(-1, 2, 2)) % 1009
    return result.reshape(-1)


def check_non_commutative(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    op = matmul_op()
    try:
        contributions = [matrices(k, 2) for k in range(size)]
        for root in range(size):
            out = np.zeros(8, "q") if rank == root else None
            comm.Reduce(contributions[rank], out, op, root)
            if rank == root:
                same(out, product(contributions), f"non-commutative Reduce root={root}")
        out = np.zeros(8, "q")
        comm.Allreduce(contributions[rank], out, op)
        same(out, product(contributions), "non-commutative Allreduce")
        comm.Scan(contributions[rank], out, op)
        same(out, product(contributions[: rank + 1]), "non-commutative Scan")
        out = np.zeros(8, "q")
        comm.Exscan(contributions[rank], out, op)
        if rank:
            same(out, product(contributions[:rank]), "non-commutative Exscan")
        whole = [matrices(k, size) for k in range(size)]
        out = np.zeros(4, "q")
        comm.Reduce_scatter_block(whole[rank], out, op)
        same(out, product(whole)[4 * rank : 4 * rank + 4], "non-commutative Reduce_scatter_block")
        strings = comm.allreduce(str(rank), op=lambda x, y: x + y)
        check(strings == "".join(str(k) for k in range(size)), "allreduce folds in rank order")
    finally:
        op.Free()


# -- objects, nonblocking, communicators ---------------------------------------------------------


def check_objects(comm: Any) -> None:
    rank, size = comm.Get_rank(), comm.Get_size()
    payload = {"rank": rank, "array": np.arange(rank + 1), "text": "x" * rank}
    for root in range(size):
        got = comm.bcast(payload if rank == root else None, root=root)
        check(got["rank"] == root and np.array_equal(got["array"], np.arange(root + 1)), "bcast")
        gathered = comm.gather(rank * 10, root=root)
        check(gathered == ([k * 10 for k in range(size)] if rank == root else None), "gather")
        item = comm.scatter([("item", k) for k in range(size)] if rank == root else None, root)
        check(item == ("item", rank), f"scatter root={root}")
        reduced = comm.reduce([rank], op=SUM, root=root)
        check(reduced == (list(range(size)) if rank == root else None), "reduce of lists")
    check(comm.allgather(payload["text"]) == ["x" * k for k in range(size)], "allgather")
    check(
        comm.alltoall([(rank, k) for k in range(size)]) == [(k, rank) for k in range(size)],
        "alltoall",
    )
    check(comm.allreduce(rank, op=MAX) == size - 1, "allreduce MAX")
    check(comm.allreduce((rank % 2, rank), op=MINLOC) == (0, 0), "allreduce MINLOC")
    check(comm.scan(rank + 1) == sum(range(1, rank + 2)), "scan")
    check(comm.exscan(rank + 1) == (None if rank == 0 else sum(range(1, rank + 1))), "exscan")
    check(comm.allreduce(rank == 0, op=LOR) is True, "allreduce LOR gives a bool")


def check_nonblocking(comm: Any) -> None:
    """Several nonblocking collectives in flight at once, with point-to-point in between."""
    rank, size = comm.Get_rank(), comm.Get_size()
    right, left = (rank + 1) % size, (rank - 1) % size
    count = 5
    sums = [np.empty(count) for _ in range(3)]
    bcast = data(0, count, "i") if rank == 0 else np.zeros(count, "i")
    gathered = np.zeros(size * count, "i")
    alltoall = np.zeros(size, "q")
    scanned = np.zeros(count, "d")
    counts = vector_counts(size)
    gatherv = np.zeros(sum(counts), "d") if rank == size - 1 else None
    scattered = np.zeros(counts[rank], "d")
    rsb = np.zeros(2, "i")
    rs = np.zeros(counts[rank], "i")
    requests = [comm.Iallreduce(data(rank, count, "d", salt), sums[salt], SUM) for salt in range(3)]
    requests.append(comm.Ibarrier())
    requests.append(comm.Ibcast(bcast, root=0))
    token = np.array([rank], "i")
    incoming = np.zeros(1, "i")
    receive = comm.Irecv(incoming, source=left, tag=3)
    comm.Send(token, dest=right, tag=3)  # user traffic while the collectives are in flight
    requests += [
        comm.Iallgather(data(rank, count, "i"), gathered),
        comm.Ialltoall(np.arange(size, dtype="q") + 100 * rank, alltoall),
        comm.Iscan(data(rank, count, "d"), scanned),
        comm.Igatherv(data(rank, counts[rank], "d"), [gatherv, counts], root=size - 1),
        comm.Iscatterv(
            [np.concatenate([data(k, counts[k], "d") for k in range(size)]), counts]
            if rank == 0
            else None,
            scattered,
            root=0,
        ),
        comm.Ireduce_scatter_block(data(rank, 2 * size, "i"), rsb),
        comm.Ireduce_scatter(data(rank, sum(counts), "i"), rs, counts),
    ]
    out = np.zeros(count)
    comm.Allreduce(data(rank, count, "d", 9), out)  # a blocking call among the nonblocking ones
    receive.Wait()
    Request.Waitall(requests)
    check(incoming[0] == left, "point-to-point overlapped with collectives")
    for salt in range(3):
        want = fold("SUM", [data(k, count, "d", salt) for k in range(size)])
        same(sums[salt], want, f"Iallreduce #{salt}")
    same(out, fold("SUM", [data(k, count, "d", 9) for k in range(size)]), "Allreduce among I*")
    same(bcast, data(0, count, "i"), "Ibcast")
    same(gathered, np.concatenate([data(k, count, "i") for k in range(size)]), "Iallgather")
    same(alltoall, np.arange(size) * 100 + rank, "Ialltoall")
    same(scanned, fold("SUM", [data(k, count, "d") for k in range(rank + 1)]), "Iscan")
    if rank == size - 1:
        same(gatherv, np.concatenate([data(k, counts[k], "d") for k in range(size)]), "Igatherv")
    same(scattered, data(rank, counts[rank], "d"), "Iscatterv")
    same(
        rsb,
        fold("SUM", [data(k, 2 * size, "i") for k in range(size)])[2 * rank : 2 * rank + 2],
        "Ireduce_scatter_block",
    )
    start = sum(counts[:rank])
    whole = fold("SUM", [data(k, sum(counts), "i") for k in range(size)])
    same(rs, whole[start : start + counts[rank]], "Ireduce_scatter")
    # More calls in flight than the framework has tags: later ones wait for earlier ones.
    many = [np.zeros(1, "i") for _ in range(120)]
    flood = [comm.Iallreduce(np.array([k], "i"), many[k]) for k in range(120)]
    Request.Waitall(flood)
    check([int(m[0]) for m in many] == [k * size for k in range(120)], "120 Iallreduce in flight")
    request = comm.Ibarrier()
    request.Wait()
    check(not request, "a completed collective request becomes REQUEST_NULL")


def check_errors(comm: Any) -> None:
    """Bad arguments are refused on every rank alike, before anything moves."""
    from ompy.ompi.errors import ERR_OP, ERR_ROOT
    from ompy.ompi.errors import Exception as MPIException

    size = comm.Get_size()
    for call in (lambda: comm.Bcast(np.zeros(1), root=size), lambda: comm.bcast(1, root=-1)):
        try:
            call()
        except MPIException as error:
            check(error.Get_error_class() == ERR_ROOT, f"bad root gives ERR_ROOT, not {error}")
        else:
            raise AssertionError("a root outside the communicator was accepted")
    try:
        comm.Allreduce(np.zeros(2, "d"), np.zeros(2, "d"), BAND)
    except MPIException as error:
        check(error.Get_error_class() == ERR_OP, "BAND on DOUBLE gives ERR_OP")
    else:
        raise AssertionError("BAND on doubles was accepted")
    try:
        comm.Allreduce(np.zeros(2, "d"), np.zeros(3, "d"))
    except ValueError as error:
        check("mismatch in send count 2 and receive count 3" in str(error), str(error))
    else:
        raise AssertionError("mismatched counts were accepted")


def run_battery(comm: Any) -> None:
    """Everything above, then the same on sub-communicators made by Dup, Split and Create."""
    run_core(comm)
    check_errors(comm)
    rank, size = comm.Get_rank(), comm.Get_size()
    dup = comm.Dup()
    halves = comm.Split(rank % 2, -rank)  # reversed order inside each half
    evens = comm.Create(comm.Get_group().Incl(list(range(0, size, 2))))
    try:
        check_nonblocking(dup)
        check_reductions(halves)
        check_non_commutative(halves)
        check_objects(halves)
        if evens:
            check_gather_scatter(evens)
            check_nonblocking(evens)
        check(halves.allreduce(1) == halves.Get_size(), "Split sizes")
    finally:
        dup.Free()
        halves.Free()
        if evens:
            evens.Free()


def run_core(comm: Any) -> None:
    check_barrier_and_bcast(comm)
    check_gather_scatter(comm)
    check_vector_forms(comm)
    check_mpi4py_vector_forms(comm)
    check_allgather_alltoall(comm)
    check_alltoallw(comm)
    check_reductions(comm)
    check_reduction_forms(comm)
    check_non_commutative(comm)
    check_objects(comm)
    check_nonblocking(comm)
