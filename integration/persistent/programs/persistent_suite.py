"""Every persistent collective (MPI-4) in one job of any size; prints one JSON report per rank.

Run as ``ompy run -n N python persistent_suite.py [STARTS]``.  Each operation is initialized
once on COMM_WORLD (and the reductions on a Split communicator) and started STARTS times with
new data each time; after every start the result is checked against a numpy reference computed
locally (every rank's data is a known function of its rank and the start number).  Then: the
requests started in a different order on each rank (one by one and with Startall), mixed with
ordinary and nonblocking collectives in flight; rendezvous-sized messages; 1,000 starts of a
one-double Allreduce_init timed against 1,000 plain Allreduce calls; the errors MPI's rules
call for; and every ``Neighbor_*_init`` on Cartesian, graph and distributed-graph topologies
(``packages/ompi/tests/persistent_neighbor_battery.py``), a 2-D halo exchange included.  The
report lists what passed.
"""

import json
import random
import sys
from pathlib import Path

import numpy as np

from ompy import MPI

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "packages/ompi/tests"))
from persistent_neighbor_battery import run_persistent_neighbor_battery

STARTS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
world = MPI.COMM_WORLD
passed: list[str] = []


def data(shape, rank, start, salt=0):
    """Rank ``rank``'s contribution to start ``start`` (small integers: sums are exact)."""
    count = int(np.prod(shape))
    return ((np.arange(count) + 3 * rank + 7 * start + salt) % 13 + 1).reshape(shape).astype("d")


def check(name, got, want):
    if not np.array_equal(got, want):
        raise AssertionError(f"{name}: got {got!r}, expected {want!r}")


def every_operation(comm, label, root):
    rank, size = comm.Get_rank(), comm.Get_size()
    root %= size
    n = 5
    counts = [(i % 3) + 1 for i in range(size)]
    displs = [sum(counts[:i]) for i in range(size)]
    total = sum(counts)
    everyone = range(size)
    cases = []  # (name, request, refill(start), verify(start))

    def case(name, request, refill, verify):
        cases.append((name, request, refill, verify))

    s, r = np.zeros(n), np.zeros(n)
    case(
        "allreduce",
        comm.Allreduce_init(s, r, MPI.SUM),
        lambda t: s.__setitem__(..., data(n, rank, t)),
        lambda t: check("allreduce", r, sum(data(n, p, t) for p in everyone)),
    )
    ip = np.zeros(n)
    case(
        "allreduce in place max",
        comm.Allreduce_init(MPI.IN_PLACE, ip, MPI.MAX),
        lambda t: ip.__setitem__(..., data(n, rank, t)),
        lambda t: check("allreduce max", ip, np.max([data(n, p, t) for p in everyone], axis=0)),
    )
    rs, rr = np.zeros(n), np.zeros(n)
    case(
        "reduce",
        comm.Reduce_init(rs, rr, MPI.PROD, root),
        lambda t: rs.__setitem__(..., data(n, rank, t) % 3 + 1),
        lambda t: (
            rank != root
            or check("reduce", rr, np.prod([data(n, p, t) % 3 + 1 for p in everyone], axis=0))
        ),
    )
    bb = np.zeros(n)
    case(
        "bcast",
        comm.Bcast_init(bb, root),
        lambda t: bb.__setitem__(..., data(n, rank, t) if rank == root else -1),
        lambda t: check("bcast", bb, data(n, root, t)),
    )
    gs, gr = np.zeros(n), np.zeros((size, n))
    case(
        "gather",
        comm.Gather_init(gs, gr, root),
        lambda t: gs.__setitem__(..., data(n, rank, t)),
        lambda t: rank != root or check("gather", gr, np.array([data(n, p, t) for p in everyone])),
    )
    vs, vr = np.zeros(counts[rank]), np.zeros(total)
    case(
        "gatherv",
        comm.Gatherv_init(vs, [vr, counts, displs, MPI.DOUBLE], root),
        lambda t: vs.__setitem__(..., data(counts[rank], rank, t)),
        lambda t: (
            rank != root
            or check("gatherv", vr, np.concatenate([data(counts[p], p, t) for p in everyone]))
        ),
    )
    ss, sr = np.zeros((size, n)), np.zeros(n)
    case(
        "scatter",
        comm.Scatter_init(ss, sr, root),
        lambda t: ss.__setitem__(..., np.array([data(n, p, t, rank) for p in everyone])),
        lambda t: check("scatter", sr, data(n, rank, t, root)),
    )
    svs, svr = np.zeros(total), np.zeros(counts[rank])
    case(
        "scatterv",
        comm.Scatterv_init([svs, counts, displs, MPI.DOUBLE], svr, root),
        lambda t: svs.__setitem__(
            ..., np.concatenate([data(counts[p], p, t, rank) for p in everyone])
        ),
        lambda t: check("scatterv", svr, data(counts[rank], rank, t, root)),
    )
    ags, agr = np.zeros(n), np.zeros((size, n))
    case(
        "allgather",
        comm.Allgather_init(ags, agr),
        lambda t: ags.__setitem__(..., data(n, rank, t)),
        lambda t: check("allgather", agr, np.array([data(n, p, t) for p in everyone])),
    )
    avr = np.zeros(total)
    case(
        "allgatherv in place",
        comm.Allgatherv_init(MPI.IN_PLACE, [avr, counts, displs, MPI.DOUBLE]),
        lambda t: avr[displs[rank] : displs[rank] + counts[rank]].__setitem__(
            ..., data(counts[rank], rank, t)
        ),
        lambda t: check(
            "allgatherv", avr, np.concatenate([data(counts[p], p, t) for p in everyone])
        ),
    )
    ats, atr = np.zeros((size, n)), np.zeros((size, n))
    case(
        "alltoall",
        comm.Alltoall_init(ats, atr),
        lambda t: ats.__setitem__(..., np.array([data(n, rank, t, p) for p in everyone])),
        lambda t: check("alltoall", atr, np.array([data(n, p, t, rank) for p in everyone])),
    )
    aip = np.zeros((size, n))
    case(
        "alltoall in place",
        comm.Alltoall_init(MPI.IN_PLACE, aip),
        lambda t: aip.__setitem__(..., np.array([data(n, rank, t, p) for p in everyone])),
        lambda t: check(
            "alltoall in place", aip, np.array([data(n, p, t, rank) for p in everyone])
        ),
    )
    sc = [(rank + p) % 2 + 1 for p in everyone]  # what I send to p; p sends me (p + rank) % 2 + 1
    sd = [sum(sc[:i]) for i in everyone]
    vvs, vvr = np.zeros(sum(sc)), np.zeros(sum(sc))
    case(
        "alltoallv",
        comm.Alltoallv_init([vvs, sc, sd, MPI.DOUBLE], [vvr, sc, sd, MPI.DOUBLE]),
        lambda t: vvs.__setitem__(..., np.concatenate([data(sc[p], rank, t, p) for p in everyone])),
        lambda t: check(
            "alltoallv", vvr, np.concatenate([data(sc[p], p, t, rank) for p in everyone])
        ),
    )
    ws, wr = np.zeros((size, 2)), np.zeros((size, 2))
    layout = ([2] * size, [16 * p for p in everyone]), [MPI.DOUBLE] * size
    case(
        "alltoallw",
        comm.Alltoallw_init([ws, *layout], [wr, *layout]),
        lambda t: ws.__setitem__(..., np.array([data(2, rank, t, p) for p in everyone])),
        lambda t: check("alltoallw", wr, np.array([data(2, p, t, rank) for p in everyone])),
    )
    rbs, rbr = np.zeros((size, n)), np.zeros(n)
    case(
        "reduce_scatter_block",
        comm.Reduce_scatter_block_init(rbs, rbr, MPI.SUM),
        lambda t: rbs.__setitem__(..., data((size, n), rank, t)),
        lambda t: check(
            "reduce_scatter_block", rbr, sum(data((size, n), p, t) for p in everyone)[rank]
        ),
    )
    rvs, rvr = np.zeros(total), np.zeros(counts[rank])
    mine = slice(displs[rank], displs[rank] + counts[rank])
    case(
        "reduce_scatter",
        comm.Reduce_scatter_init(rvs, rvr, counts, MPI.SUM),
        lambda t: rvs.__setitem__(..., data(total, rank, t)),
        lambda t: check("reduce_scatter", rvr, sum(data(total, p, t) for p in everyone)[mine]),
    )
    scs, scr = np.zeros(n), np.zeros(n)
    case(
        "scan",
        comm.Scan_init(scs, scr, MPI.SUM),
        lambda t: scs.__setitem__(..., data(n, rank, t)),
        lambda t: check("scan", scr, sum(data(n, p, t) for p in range(rank + 1))),
    )
    exs, exr = np.zeros(n), np.full(n, -7.0)
    case(
        "exscan",
        comm.Exscan_init(exs, exr, MPI.SUM),
        lambda t: exs.__setitem__(..., data(n, rank, t)),
        lambda t: rank == 0 or check("exscan", exr, sum(data(n, p, t) for p in range(rank))),
    )
    barrier = comm.Barrier_init()
    for start in range(STARTS):
        for _name, request, refill, verify in cases:
            refill(start)
            request.Start()
            request.Wait()
            verify(start)
        barrier.Start()
        barrier.Wait()
    for _name, request, _refill, _verify in cases:
        request.Free()
    barrier.Free()
    passed.extend(f"{label} {name}" for name, *_ in cases)
    passed.append(f"{label} barrier")


def any_order_with_other_collectives(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    ins = [np.zeros(4) for _ in range(5)]
    outs = [np.zeros(4) for _ in range(5)]
    requests = [comm.Allreduce_init(ins[i], outs[i]) for i in range(5)]
    chooser = random.Random(rank)
    for start in range(STARTS):
        for i, buffer in enumerate(ins):
            buffer[:] = data(4, rank, start, i)
        order = list(range(5))
        chooser.shuffle(order)
        if start % 2:
            MPI.Prequest.Startall([requests[i] for i in order])
        else:
            for i in order:
                requests[i].Start()
        other = np.zeros(1)
        pending = comm.Iallreduce(np.ones(1), other)
        if comm.allreduce(rank) != size * (size - 1) // 2:
            raise AssertionError("the object allreduce among persistent starts")
        MPI.Request.Waitall([*requests, pending])
        check("iallreduce among persistent starts", other, np.full(1, size))
        for i, result in enumerate(outs):
            check("any order", result, sum(data(4, p, start, i) for p in range(size)))
    for request in requests:
        request.Free()
    passed.append("any start order")


def rendezvous_sized(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    count = 1 << 17  # 1 MiB of doubles
    big, total = np.zeros(count), np.zeros(count)
    request = comm.Allreduce_init(big, total)
    for start in range(3):
        big[:] = np.arange(count) + rank + start
        request.Start()
        request.Wait()
        check("1 MiB allreduce", total, size * np.arange(count) + sum(range(size)) + size * start)
    request.Free()
    passed.append("rendezvous allreduce")


def timing(comm):
    one, result = np.ones(1), np.zeros(1)
    request = comm.Allreduce_init(one, result)
    for _ in range(50):  # warm up both paths
        request.Start()
        request.Wait()
        comm.Allreduce(one, result)
    comm.Barrier()
    began = MPI.Wtime()
    for _ in range(1000):
        request.Start()
        request.Wait()
    persistent = MPI.Wtime() - began
    comm.Barrier()
    began = MPI.Wtime()
    for _ in range(1000):
        comm.Allreduce(one, result)
    plain = MPI.Wtime() - began
    check("timed allreduce", result, np.full(1, comm.Get_size()))
    request.Free()
    passed.append("1000 starts")
    return {"persistent_us": persistent * 1e3, "plain_us": plain * 1e3}


def errors(comm):
    size = comm.Get_size()
    buffer = np.zeros(2)
    request = comm.Allreduce_init(MPI.IN_PLACE, buffer)
    request.Start()
    for attempt in (request.Start, request.Free):
        try:
            attempt()
        except MPI.Exception as error:
            if error.Get_error_class() != MPI.ERR_REQUEST:
                raise
        else:
            raise AssertionError(f"{attempt.__name__} of an active request was accepted")
    request.Wait()
    request.Free()
    try:
        comm.Bcast_init(buffer, root=size)
    except MPI.Exception as error:
        if error.Get_error_class() != MPI.ERR_ROOT:
            raise
    else:
        raise AssertionError("a root out of range was accepted")
    passed.append("errors")


every_operation(world, "world", 0)
every_operation(world, "world root last", world.Get_size() - 1)
half = world.Split(world.Get_rank() % 2, -world.Get_rank())  # reversed order in each half
every_operation(half, "split", 1)
half.Free()
any_order_with_other_collectives(world)
rendezvous_sized(world)
times = timing(world)
errors(world)
passed.extend(f"neighbor {name}" for name in run_persistent_neighbor_battery(MPI, world))
print(
    json.dumps({"rank": world.Get_rank(), "size": world.Get_size(), "passed": passed, **times}),
    flush=True,
)
