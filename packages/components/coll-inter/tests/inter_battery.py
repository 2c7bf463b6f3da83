"""Intercommunicators end to end, every result checked against a value computed locally.

``run_inter_battery(world)`` runs on every member of ``world`` (an ``Intracomm`` of at least two
processes) and returns the names of the checks that passed; the first wrong result raises
``AssertionError`` naming the check, the shape and the rank.  Every process contributes data
that is a function of its world rank, and every process knows both groups of each
intercommunicator it builds, so it can compute what each collective must give it.

It builds intercommunicators of several shapes (two halves, unequal for odd sizes; even and odd
ranks; one process against the rest, through ``Create_from_groups``), and on each runs
point-to-point across the groups, every collective in its blocking and nonblocking forms (the
root on either side, at rank 0 or at the last rank), the vector and object forms, several
nonblocking collectives in flight at once, a derived datatype, and the constructors (``Dup``,
``Split``, ``Create``, ``Merge``), names and attributes.  The same battery runs in-process over
the loopback PML (this package's tests) and in real processes through ``ompy run``
(``integration/intercomm``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ompy import MPI

K = 3  # elements per block


def data(world_rank: int, count: int = K) -> np.ndarray:
    """What process ``world_rank`` contributes (doubles that name it)."""
    return np.arange(count, dtype="d") + 100.0 * world_rank


class Battery:
    """The checks of one process, and the names of those that passed."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.me = world.Get_rank()
        self.passed: list[str] = []

    def check(self, name: str, condition: bool) -> None:
        if not condition:
            raise AssertionError(f"world rank {self.me}: {name}")
        self.passed.append(name)


def _call(comm: Any, name: str, nonblocking: bool, *args: Any, **kwargs: Any) -> None:
    """``comm.Name(*args)``, or ``comm.IName(*args).Wait()``."""
    if nonblocking:
        request = getattr(comm, "I" + name[0].lower() + name[1:])(*args, **kwargs)
        request.Wait()
    else:
        getattr(comm, name)(*args, **kwargs)


# -- the shapes ------------------------------------------------------------------------------------


def shapes(world: Any) -> list[tuple[str, Any, list[int], list[int]]]:
    """(name, intercommunicator, my group's world ranks, the remote group's) of each shape."""
    me, size = world.Get_rank(), world.Get_size()
    found = []
    half = (size + 1) // 2
    for name, color_of in (
        ("halves", lambda r: 0 if r < half else 1),
        ("odd-even", lambda r: r % 2),
    ):
        groups = [[r for r in range(size) if color_of(r) == c] for c in (0, 1)]
        color = color_of(me)
        local = world.Split(color, me)
        remote_leader = groups[1 - color][0]
        inter = local.Create_intercomm(0, world, remote_leader, tag=11)
        local.Free()
        found.append((name, inter, groups[color], groups[1 - color]))
    world_group = world.Get_group()
    one, rest = [size - 1], list(range(size - 1))
    mine, theirs = (one, rest) if me == size - 1 else (rest, one)
    local_group, remote_group = world_group.Incl(mine), world_group.Incl(theirs)
    inter = MPI.Intercomm.Create_from_groups(local_group, 0, remote_group, 0, "inter-battery")
    found.append(("one-vs-rest", inter, mine, theirs))
    return found


# -- point-to-point --------------------------------------------------------------------------------


def point_to_point(t: Battery, shape: str, ic: Any, mine: list[int], theirs: list[int]) -> None:
    rank, remote = ic.Get_rank(), ic.Get_remote_size()
    t.check(
        f"{shape}: sizes",
        (ic.Get_size(), remote, rank) == (len(mine), len(theirs), mine.index(t.me)),
    )
    t.check(f"{shape}: is_inter", ic.Is_inter() and not ic.Is_intra() and ic.is_inter)
    translated = MPI.Group.Translate_ranks(
        ic.Get_remote_group(), list(range(remote)), t.world.Get_group()
    )
    t.check(f"{shape}: remote group", list(translated) == theirs)
    # every process sends to every remote process; receives name the sender's remote rank
    requests = [ic.Isend(data(t.me), peer, tag=rank) for peer in range(remote)]
    seen = {}
    for _ in range(remote):
        out = np.empty(K)
        status = MPI.Status()
        ic.Recv(out, MPI.ANY_SOURCE, MPI.ANY_TAG, status)
        seen[status.Get_source()] = (status.Get_tag(), out)
    MPI.Request.Waitall(requests)
    ic.Barrier()  # no message of the next step may meet the ANY_TAG receives above
    t.check(
        f"{shape}: send/recv from every remote rank",
        sorted(seen) == list(range(remote))
        and all(
            tag == src and np.array_equal(out, data(theirs[src]))
            for src, (tag, out) in seen.items()
        ),
    )
    # objects, synchronous sends and probes, paired with the same rank of the other group
    partner = rank % remote
    senders = [a for a in range(len(theirs)) if a % len(mine) == rank]
    sends = [ic.issend({"from": t.me}, dest=partner, tag=5)]
    got = []
    for source in senders:
        status = MPI.Status()
        ic.Probe(source, 5, status)
        got.append((status.Get_source(), ic.recv(source=source, tag=5)))
    MPI.Request.Waitall(sends)
    t.check(
        f"{shape}: ssend/probe/recv objects",
        got == [(s, {"from": theirs[s]}) for s in senders],
    )
    if rank < remote and rank < len(theirs) and len(mine) == len(theirs):
        out = ic.sendrecv(t.me, dest=rank, source=rank)
        t.check(f"{shape}: sendrecv", out == theirs[rank])
    t.check(
        f"{shape}: bad rank refused", _raises(lambda: ic.Send(data(t.me), remote), MPI.ERR_RANK)
    )


def _raises(action: Callable[[], Any], error_class: int) -> bool:
    try:
        action()
    except MPI.Exception as error:
        return error.Get_error_class() == error_class
    return False


# -- collectives -----------------------------------------------------------------------------------


def rooted(t: Battery, shape: str, ic: Any, mine: list[int], theirs: list[int]) -> None:
    """Bcast, Gather(v), Scatter(v), Reduce and their object forms, rooted on either side."""
    rank, remote = ic.Get_rank(), ic.Get_remote_size()
    low = mine[0] < theirs[0]
    for nb in (False, True):
        kind = "nonblocking" if nb else "blocking"
        for root_low in (True, False):
            for at_last in (False, True):
                in_root_group = low == root_low
                root_group = mine if in_root_group else theirs
                root_index = len(root_group) - 1 if at_last else 0
                if in_root_group:
                    root = MPI.ROOT if rank == root_index else MPI.PROC_NULL
                else:
                    root = root_index
                case = (
                    f"{shape}: {kind} root in {'low' if root_low else 'high'} group at {root_index}"
                )
                _rooted_case(t, case, ic, nb, root, mine, theirs, root_group[root_index])
    del remote


def _rooted_case(  # noqa: PLR0917 (the case, spelled out)
    t: Battery,
    case: str,
    ic: Any,
    nb: bool,
    root: int,
    mine: list[int],
    theirs: list[int],
    root_world: int,
) -> None:
    rank, remote = ic.Get_rank(), ic.Get_remote_size()
    # Bcast
    buf = data(t.me) if root == MPI.ROOT else np.full(K, -1.0)
    _call(ic, "Bcast", nb, buf, root=root)
    if root == MPI.ROOT:
        t.check(f"{case}: Bcast root keeps", np.array_equal(buf, data(t.me)))
    elif root == MPI.PROC_NULL:
        t.check(f"{case}: Bcast PROC_NULL untouched", (buf == -1).all())
    else:
        t.check(f"{case}: Bcast", np.array_equal(buf, data(root_world)))
    # Gather
    out = np.full((remote, K), -1.0)
    _call(ic, "Gather", nb, data(t.me), out if root == MPI.ROOT else None, root=root)
    if root == MPI.ROOT:
        t.check(
            f"{case}: Gather", all(np.array_equal(out[i], data(theirs[i])) for i in range(remote))
        )
    # Gatherv: rank i of the sending group sends i + 1 elements
    counts = [i + 1 for i in range(remote)]
    displs = [sum(counts[:i]) for i in range(remote)]
    flat = np.full(sum(counts) + 2, -1.0)
    mine_v = data(t.me, rank + 1)
    _call(
        ic,
        "Gatherv",
        nb,
        mine_v,
        [flat, (counts, displs), MPI.DOUBLE] if root == MPI.ROOT else None,
        root=root,
    )
    if root == MPI.ROOT:
        t.check(
            f"{case}: Gatherv",
            all(
                np.array_equal(flat[displs[i] : displs[i] + counts[i]], data(theirs[i], i + 1))
                for i in range(remote)
            )
            and (flat[-2:] == -1).all(),
        )
    # Scatter: block i (data of the root + i) to remote rank i
    blocks = np.array([data(t.me) + i for i in range(remote)]) if root == MPI.ROOT else None
    got = np.full(K, -1.0)
    _call(
        ic, "Scatter", nb, blocks, got if root not in (MPI.ROOT, MPI.PROC_NULL) else None, root=root
    )
    if root >= 0:
        t.check(f"{case}: Scatter", np.array_equal(got, data(root_world) + rank))
    # Scatterv: remote rank i gets i + 1 elements
    if root == MPI.ROOT:
        flat = np.concatenate([data(t.me, i + 1) + 10 * i for i in range(remote)])
        sendv = [flat, (counts, displs), MPI.DOUBLE]
    else:
        sendv = None
    got = np.full(rank + 1, -1.0)
    _call(ic, "Scatterv", nb, sendv, got if root >= 0 else None, root=root)
    if root >= 0:
        t.check(f"{case}: Scatterv", np.array_equal(got, data(root_world, rank + 1) + 10 * rank))
    # Reduce (SUM): the other group's data summed at the root
    out = np.full(K, -1.0)
    _call(
        ic,
        "Reduce",
        nb,
        data(t.me) if root >= 0 else None,
        out if root == MPI.ROOT else None,
        op=MPI.SUM,
        root=root,
    )
    if root == MPI.ROOT:
        t.check(f"{case}: Reduce", np.allclose(out, sum(data(w) for w in theirs)))
    if nb:
        return
    # object forms
    obj = ic.bcast({"root": t.me} if root == MPI.ROOT else None, root=root)
    t.check(f"{case}: bcast object", obj == ({"root": root_world} if root >= 0 else None))
    gathered = ic.gather(("g", t.me), root=root)
    t.check(
        f"{case}: gather object",
        gathered == ([("g", w) for w in theirs] if root == MPI.ROOT else None),
    )
    item = ic.scatter(
        [("s", t.me, i) for i in range(remote)] if root == MPI.ROOT else None, root=root
    )
    t.check(f"{case}: scatter object", item == (("s", root_world, rank) if root >= 0 else None))
    text = ic.reduce(str(t.me) + ",", op=lambda a, b: a + b, root=root)  # not commutative
    t.check(
        f"{case}: reduce object in rank order",
        text == ("".join(f"{w}," for w in theirs) if root == MPI.ROOT else None),
    )


def everyone(t: Battery, shape: str, ic: Any, mine: list[int], theirs: list[int]) -> None:
    """Barrier, Allgather(v), Alltoall(v/w), Allreduce, Reduce_scatter(_block), objects."""
    rank, remote, size = ic.Get_rank(), ic.Get_remote_size(), ic.Get_size()
    for nb in (False, True):
        case = f"{shape}: {'nonblocking' if nb else 'blocking'}"
        _call(ic, "Barrier", nb)
        t.check(f"{case}: Barrier", True)
        out = np.full((remote, K), -1.0)
        _call(ic, "Allgather", nb, data(t.me), out)
        t.check(
            f"{case}: Allgather",
            all(np.array_equal(out[i], data(theirs[i])) for i in range(remote)),
        )
        counts = [i % 3 + 1 for i in range(remote)]
        displs = [sum(counts[:i]) + i for i in range(remote)]  # a gap after each block
        flat = np.full(displs[-1] + counts[-1], -1.0)
        _call(ic, "Allgatherv", nb, data(t.me, rank % 3 + 1), [flat, (counts, displs), MPI.DOUBLE])
        t.check(
            f"{case}: Allgatherv",
            all(
                np.array_equal(flat[displs[i] : displs[i] + counts[i]], data(theirs[i], counts[i]))
                for i in range(remote)
            ),
        )
        # Alltoall: block j to remote rank j holds 1000 * me + j
        send = np.array([np.full(K, 1000.0 * t.me + j) for j in range(remote)])
        recv = np.full((remote, K), -1.0)
        _call(ic, "Alltoall", nb, send, recv)
        t.check(
            f"{case}: Alltoall",
            all((recv[i] == 1000.0 * theirs[i] + rank).all() for i in range(remote)),
        )
        # Alltoallv: c(a, b) = (a + 2 b) % 3 + 1 elements from local rank a to remote rank b
        scounts = [(rank + 2 * b) % 3 + 1 for b in range(remote)]
        rcounts = [(a + 2 * rank) % 3 + 1 for a in range(remote)]
        sdispls = [sum(scounts[:b]) for b in range(remote)]
        rdispls = [sum(rcounts[:a]) for a in range(remote)]
        sflat = np.concatenate([np.full(scounts[b], 1000.0 * t.me + b) for b in range(remote)])
        rflat = np.full(sum(rcounts), -1.0)
        _call(
            ic,
            "Alltoallv",
            nb,
            [sflat, (scounts, sdispls), MPI.DOUBLE],
            [rflat, (rcounts, rdispls), MPI.DOUBLE],
        )
        t.check(
            f"{case}: Alltoallv",
            all(
                (rflat[rdispls[a] : rdispls[a] + rcounts[a]] == 1000.0 * theirs[a] + rank).all()
                for a in range(remote)
            ),
        )
        # Alltoallw: one int to each remote rank, byte displacements
        sendw = np.array([10 * t.me + b for b in range(remote)], dtype="i")
        recvw = np.full(remote, -1, dtype="i")
        byte = [4 * i for i in range(remote)]
        _call(
            ic,
            "Alltoallw",
            nb,
            [sendw, ([1] * remote, byte), [MPI.INT] * remote],
            [recvw, ([1] * remote, byte), [MPI.INT] * remote],
        )
        t.check(f"{case}: Alltoallw", list(recvw) == [10 * theirs[a] + rank for a in range(remote)])
        out = np.full(K, -1.0)
        _call(ic, "Allreduce", nb, data(t.me), out, op=MPI.SUM)
        t.check(f"{case}: Allreduce", np.allclose(out, sum(data(w) for w in theirs)))
        out = np.full(K, -1.0)
        _call(ic, "Allreduce", nb, data(t.me), out, op=MPI.MAX)
        t.check(f"{case}: Allreduce MAX", np.array_equal(out, data(max(theirs))))
        # Reduce_scatter_block: both groups reduce len(mine) * len(theirs) elements
        total = size * remote
        each = total // size  # this group's block: the other group's size
        out = np.full(each, -1.0)
        _call(ic, "Reduce_scatter_block", nb, data(t.me, total), out, op=MPI.SUM)
        expect = sum(data(w, total) for w in theirs)[rank * each : (rank + 1) * each]
        t.check(f"{case}: Reduce_scatter_block", np.allclose(out, expect))
        # Reduce_scatter: uneven counts over this group, the same total
        counts = [total - (size - 1) if i == 0 else 1 for i in range(size)]
        start = sum(counts[:rank])
        out = np.full(counts[rank], -1.0)
        _call(ic, "Reduce_scatter", nb, data(t.me, total), out, counts, op=MPI.SUM)
        expect = sum(data(w, total) for w in theirs)[start : start + counts[rank]]
        t.check(f"{case}: Reduce_scatter", np.allclose(out, expect))
    # a user operation that is associative but not commutative: the lowest rank's value wins
    first = MPI.Op.Create(_keep_first, commute=False)
    out = np.full(K, -1.0)
    ic.Allreduce(data(t.me), out, op=first)
    first.Free()
    t.check(f"{shape}: Allreduce keeps rank order", np.array_equal(out, data(theirs[0])))
    # objects
    t.check(f"{shape}: allgather object", ic.allgather(("a", t.me)) == [("a", w) for w in theirs])
    items = [("t", t.me, b) for b in range(remote)]
    t.check(f"{shape}: alltoall object", ic.alltoall(items) == [("t", w, rank) for w in theirs])
    t.check(f"{shape}: allreduce object", ic.allreduce([t.me], op=lambda a, b: a + b) == theirs)
    t.check(f"{shape}: allreduce object SUM", ic.allreduce(t.me) == sum(theirs))
    # several nonblocking collectives in flight at once, completed in reverse
    low = mine[0] < theirs[0]
    root = (MPI.ROOT if rank == 0 else MPI.PROC_NULL) if low else 0
    total = np.full(K, -1.0)
    bcast = data(t.me) if root == MPI.ROOT else np.full(K, -1.0)
    gathered = np.full((remote, K), -1.0)
    requests = [
        ic.Iallreduce(data(t.me), total),
        ic.Ibcast(bcast, root=root),
        ic.Ibarrier(),
        ic.Iallgather(data(t.me) * 2, gathered),
    ]
    for request in reversed(requests):
        request.Wait()
    t.check(
        f"{shape}: nonblocking in flight together",
        np.allclose(total, sum(data(w) for w in theirs))
        and (low or np.array_equal(bcast, data(theirs[0])))
        and all(np.array_equal(gathered[i], data(theirs[i]) * 2) for i in range(remote)),
    )
    # a derived datatype: every other double of the root's buffer
    vector = MPI.DOUBLE.Create_vector(K, 1, 2).Commit()
    buf = np.arange(2 * K, dtype="d") + t.me if root == MPI.ROOT else np.full(2 * K, -1.0)
    ic.Bcast([buf, 1, vector], root=root)
    vector.Free()
    if not low:
        expect = np.full(2 * K, -1.0)
        expect[::2] = (np.arange(2 * K, dtype="d") + theirs[0])[::2]
        t.check(f"{shape}: Bcast of a vector datatype", np.array_equal(buf, expect))
    # argument errors, raised by every process before any communication
    t.check(
        f"{shape}: bad root refused",
        _raises(lambda: ic.Bcast(np.zeros(1), root=remote), MPI.ERR_ROOT),
    )
    t.check(
        f"{shape}: IN_PLACE refused", _value_error(lambda: ic.Allreduce(MPI.IN_PLACE, np.zeros(1)))
    )
    t.check(f"{shape}: no Scan", not hasattr(ic, "Scan") and not hasattr(ic, "exscan"))


def _keep_first(inbuf: Any, inoutbuf: Any, datatype: Any) -> None:
    """``inout = in op inout`` with ``a op b = a``: ``in`` holds the lower ranks' data."""
    np.frombuffer(inoutbuf, dtype="d")[:] = np.frombuffer(inbuf, dtype="d")


def _value_error(action: Callable[[], Any]) -> bool:
    try:
        action()
    except ValueError:
        return True
    return False


# -- persistent collectives ------------------------------------------------------------------------


def persistent(t: Battery, shape: str, ic: Any, mine: list[int], theirs: list[int]) -> None:
    """Every ``X_init`` of an intercommunicator, started three times with new data each time.

    The requests are initialized in the same order everywhere (as MPI requires) but started in
    an order that differs from rank to rank (``Startall`` of a rotated list): each has its own
    tag, so they may.  Between starts every process rewrites its send buffers in place; each
    start must deliver the data of that start.
    """
    rank, remote, size = ic.Get_rank(), ic.Get_remote_size(), ic.Get_size()
    low = mine[0] < theirs[0]
    for root_low in (True, False):  # at rank 0 of the low group, at the last of the high one
        case = f"{shape}: persistent root in {'low' if root_low else 'high'} group"
        in_root_group = low == root_low
        root_group = mine if in_root_group else theirs
        index = 0 if root_low else len(root_group) - 1
        root = (MPI.ROOT if rank == index else MPI.PROC_NULL) if in_root_group else index
        _persistent_case(t, case, ic, root, mine, theirs, root_group[index])
    # Barrier_init alone, started many times; a request may not be started twice at once
    barrier = ic.Barrier_init()
    for _ in range(20):
        barrier.Start()
        barrier.Wait()
    barrier.Start()
    t.check(
        f"{shape}: persistent Start of an active request refused",
        _raises(barrier.Start, MPI.ERR_REQUEST),
    )
    t.check(
        f"{shape}: persistent Free of an active request refused",
        _raises(barrier.Free, MPI.ERR_REQUEST),
    )
    barrier.Wait()
    barrier.Free()
    t.check(f"{shape}: persistent Barrier_init started 21 times", barrier == MPI.REQUEST_NULL)
    t.check(
        f"{shape}: persistent bad root refused",
        _raises(lambda: ic.Bcast_init(np.zeros(1), root=remote), MPI.ERR_ROOT),
    )
    t.check(
        f"{shape}: persistent IN_PLACE refused",
        _value_error(lambda: ic.Allreduce_init(MPI.IN_PLACE, np.zeros(1))),
    )
    t.check(
        f"{shape}: no Scan_init", not hasattr(ic, "Scan_init") and not hasattr(ic, "Exscan_init")
    )
    # after the refused inits the tags still agree: a new request works
    out = np.full(K, -1.0)
    request = ic.Allreduce_init(data(t.me), out)
    request.Start()
    request.Wait()
    request.Free()
    t.check(
        f"{shape}: persistent after refused inits", np.allclose(out, sum(data(w) for w in theirs))
    )
    del size


def _persistent_case(  # noqa: PLR0917 (the case, spelled out)
    t: Battery,
    case: str,
    ic: Any,
    root: int,
    mine: list[int],
    theirs: list[int],
    root_world: int,
) -> None:
    rank, remote, size = ic.Get_rank(), ic.Get_remote_size(), ic.Get_size()
    total = size * remote  # the elements both groups reduce in Reduce_scatter(_block)
    # the send buffers, rewritten before every start
    send = data(t.me)
    send_v = data(t.me, rank + 1)
    send_total = data(t.me, total)
    send_all = np.zeros((remote, K))
    send_w = np.zeros(remote, dtype="i")
    # the receive buffers
    bcast = np.full(K, -1.0)
    gathered = np.full((remote, K), -1.0)
    counts = [i + 1 for i in range(remote)]
    displs = [sum(counts[:i]) for i in range(remote)]
    gathered_v = np.full(sum(counts), -1.0)
    scattered = np.full(K, -1.0)
    scattered_v = np.full(rank + 1, -1.0)
    scatter_blocks = np.zeros((remote, K))
    scatter_flat = np.zeros(sum(counts))
    reduced = np.full(K, -1.0)
    everyone = np.full((remote, K), -1.0)
    everyone_v = np.full(sum(counts) + remote, -1.0)
    gap_displs = [displs[i] + i for i in range(remote)]
    exchanged = np.full((remote, K), -1.0)
    exchanged_w = np.full(remote, -1, dtype="i")
    summed = np.full(K, -1.0)
    block = np.full(remote, -1.0)
    rs_counts = [total - (size - 1) if i == 0 else 1 for i in range(size)]
    rs_out = np.full(rs_counts[rank], -1.0)
    byte = [4 * i for i in range(remote)]
    requests = [
        ic.Bcast_init(send if root == MPI.ROOT else bcast, root=root),
        ic.Gather_init(send, gathered if root == MPI.ROOT else None, root=root),
        ic.Gatherv_init(
            send_v, [gathered_v, (counts, displs), MPI.DOUBLE] if root == MPI.ROOT else None, root
        ),
        ic.Scatter_init(scatter_blocks if root == MPI.ROOT else None, scattered, root=root),
        ic.Scatterv_init(
            [scatter_flat, (counts, displs), MPI.DOUBLE] if root == MPI.ROOT else None,
            scattered_v,
            root,
        ),
        ic.Reduce_init(send, reduced if root == MPI.ROOT else None, MPI.SUM, root),
        ic.Allgather_init(send, everyone),
        ic.Allgatherv_init(send_v, [everyone_v, (counts, gap_displs), MPI.DOUBLE]),
        ic.Alltoall_init(send_all, exchanged),
        ic.Alltoallw_init(
            [send_w, ([1] * remote, byte), [MPI.INT] * remote],
            [exchanged_w, ([1] * remote, byte), [MPI.INT] * remote],
        ),
        ic.Allreduce_init(send, summed, op=MPI.SUM),
        ic.Reduce_scatter_block_init(send_total, block, op=MPI.SUM),
        ic.Reduce_scatter_init(send_total, rs_out, rs_counts, op=MPI.SUM),
    ]
    order = requests[rank % len(requests) :] + requests[: rank % len(requests)]
    for start in range(3):
        shift = 1000.0 * start
        send[:] = data(t.me) + shift
        send_v[:] = data(t.me, rank + 1) + shift
        send_total[:] = data(t.me, total) + shift
        send_all[:] = [np.full(K, 1000.0 * t.me + j + shift) for j in range(remote)]
        send_w[:] = [10 * t.me + b + start for b in range(remote)]
        scatter_blocks[:] = [data(t.me) + i + shift for i in range(remote)]
        scatter_flat[:] = np.concatenate(
            [data(t.me, i + 1) + 10 * i + shift for i in range(remote)]
        )
        MPI.Prequest.Startall(order)
        MPI.Request.Waitall(order)
        c = f"{case} start {start}"
        if root >= 0:
            t.check(f"{c}: Bcast_init", np.array_equal(bcast, data(root_world) + shift))
            t.check(
                f"{c}: Scatter_init", np.array_equal(scattered, data(root_world) + rank + shift)
            )
            t.check(
                f"{c}: Scatterv_init",
                np.array_equal(scattered_v, data(root_world, rank + 1) + 10 * rank + shift),
            )
        if root == MPI.ROOT:
            t.check(
                f"{c}: Gather_init",
                all(np.array_equal(gathered[i], data(theirs[i]) + shift) for i in range(remote)),
            )
            t.check(
                f"{c}: Gatherv_init",
                all(
                    np.array_equal(
                        gathered_v[displs[i] : displs[i] + counts[i]],
                        data(theirs[i], i + 1) + shift,
                    )
                    for i in range(remote)
                ),
            )
            t.check(
                f"{c}: Reduce_init",
                np.allclose(reduced, sum(data(w) + shift for w in theirs)),
            )
        t.check(
            f"{c}: Allgather_init",
            all(np.array_equal(everyone[i], data(theirs[i]) + shift) for i in range(remote)),
        )
        t.check(
            f"{c}: Allgatherv_init",
            all(
                np.array_equal(
                    everyone_v[gap_displs[i] : gap_displs[i] + counts[i]],
                    data(theirs[i], i + 1) + shift,
                )
                for i in range(remote)
            )
            and all(everyone_v[gap_displs[i] + counts[i]] == -1.0 for i in range(remote)),
        )
        t.check(
            f"{c}: Alltoall_init",
            all((exchanged[i] == 1000.0 * theirs[i] + rank + shift).all() for i in range(remote)),
        )
        t.check(
            f"{c}: Alltoallw_init",
            list(exchanged_w) == [10 * theirs[a] + rank + start for a in range(remote)],
        )
        t.check(f"{c}: Allreduce_init", np.allclose(summed, sum(data(w) + shift for w in theirs)))
        each = total // size
        expect = sum(data(w, total) + shift for w in theirs)
        t.check(
            f"{c}: Reduce_scatter_block_init",
            np.allclose(block, expect[rank * each : (rank + 1) * each]),
        )
        first = sum(rs_counts[:rank])
        t.check(
            f"{c}: Reduce_scatter_init",
            np.allclose(rs_out, expect[first : first + rs_counts[rank]]),
        )
    for request in requests:
        request.Free()


# -- constructors ----------------------------------------------------------------------------------


def constructors(t: Battery, shape: str, ic: Any, mine: list[int], theirs: list[int]) -> None:
    rank, remote = ic.Get_rank(), ic.Get_remote_size()
    low = mine[0] < theirs[0]
    ic.Set_name(f"{shape}-inter")
    t.check(f"{shape}: name", ic.Get_name() == f"{shape}-inter")
    keyval = MPI.Comm.Create_keyval(copy_fn=lambda comm, key, value: value + 1)
    ic.Set_attr(keyval, 41)
    dup = ic.Dup()
    t.check(f"{shape}: Dup congruent", ic.Compare(dup) == MPI.CONGRUENT and dup.Is_inter())
    t.check(f"{shape}: Dup copies attributes", dup.Get_attr(keyval) == 42)
    t.check(f"{shape}: Compare with an intracomm", ic.Compare(t.world) == MPI.UNEQUAL)
    out = np.full(K, -1.0)
    dup.Allreduce(data(t.me), out)
    t.check(f"{shape}: Dup works", np.allclose(out, sum(data(w) for w in theirs)))
    ic.Delete_attr(keyval)
    MPI.Comm.Free_keyval(keyval)
    dup.Free()
    t.check(f"{shape}: Free", dup == MPI.COMM_NULL)
    # Split by rank parity, key reversing the order
    split = ic.Split(rank % 2, -rank)
    my_color = [w for i, w in enumerate(mine) if i % 2 == rank % 2][::-1]
    their_color = [w for i, w in enumerate(theirs) if i % 2 == rank % 2][::-1]
    if their_color:
        t.check(
            f"{shape}: Split",
            split.Is_inter()
            and split.Get_size() == len(my_color)
            and split.Get_rank() == my_color.index(t.me)
            and split.allgather(t.me) == their_color,
        )
        split.Free()
    else:
        t.check(f"{shape}: Split without a remote color", split == MPI.COMM_NULL)
    none = ic.Split(MPI.UNDEFINED)
    t.check(f"{shape}: Split UNDEFINED", none == MPI.COMM_NULL)
    # Create from the first half (rounded up) of each group
    first = ic.Get_group().Incl(list(range((len(mine) + 1) // 2)))
    created = ic.Create(first)
    first.Free()
    chosen = theirs[: (len(theirs) + 1) // 2]
    if rank < (len(mine) + 1) // 2:
        t.check(
            f"{shape}: Create",
            created.Is_inter()
            and created.Get_remote_size() == len(chosen)
            and created.allgather(t.me) == chosen,
        )
        created.Free()
    else:
        t.check(f"{shape}: Create outside", created == MPI.COMM_NULL)
    # Merge: the high group after the low one, then the default tie (lower world rank first)
    for high, order in ((not low, mine + theirs if low else theirs + mine), (False, None)):
        merged = ic.Merge(high=high)
        expect = order or (mine + theirs if low else theirs + mine)
        t.check(
            f"{shape}: Merge high={high}",
            merged.Is_intra()
            and merged.Get_size() == len(mine) + len(theirs)
            and merged.allgather(t.me) == expect
            and merged.Get_rank() == expect.index(t.me),
        )
        merged.Free()
    del remote


def run_inter_battery(world: Any) -> list[str]:
    """Every check on every shape of intercommunicator ``world`` can make (at least 2 ranks)."""
    t = Battery(world)
    for shape, ic, mine, theirs in shapes(world):
        point_to_point(t, shape, ic, mine, theirs)
        rooted(t, shape, ic, mine, theirs)
        everyone(t, shape, ic, mine, theirs)
        persistent(t, shape, ic, mine, theirs)
        constructors(t, shape, ic, mine, theirs)
        ic.Free()
    return t.passed
