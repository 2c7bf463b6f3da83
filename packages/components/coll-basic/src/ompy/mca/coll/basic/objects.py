"""The object operations (lowercase collectives): Python objects moved point to point.

Each call takes one collective tag (:func:`~ompy.ompi.mca.coll.base.next_tag`, so it never
mixes with other collectives in flight) and moves objects with the coll base's object
transport (the instance's codec, one message for a small object, out-of-band buffers after it
for large arrays) rather than through the byte operations, which would need a collective for
the sizes before the one for the bytes.  At most one object goes from one rank to another in
one call.  The shapes are mpi4py's and MPICH's:

- ``reduce``: a binomial tree towards rank 0 on absolute ranks, each inner rank applying the
  operation as its children's partial results arrive, ``op(mine, theirs)`` with ``mine`` the
  lower ranks, then rank 0 hands the result to the root if that is another rank;
- ``allreduce``: recursive doubling, the first ``2 (p - 2^k)`` ranks folded in pairs first, so
  ``log2 p`` exchanges of one object each;
- ``scan``/``exscan``: recursive doubling on partial results;
- ``bcast``: a binomial tree from the root (the object encoded once for every child);
  ``gather``, ``scatter`` and ``alltoall``: one message per pair, all posted at once;
  ``allgather``: gather to rank 0 and a broadcast.

Reductions keep MPI's rank order (any associative operation works, commutative or not); every
member gets its own object, the root included, as with mpi4py.

Every step goes through the call's :class:`~ompy.ompi.mca.coll.base.Outcome`, so a member
whose object does not pickle, whose peer's object does not unpickle or whose operation raises
still sends what the others wait for, and every member raises at the end instead of some
waiting forever.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll import CollComm, Combine, Items
from ompy.ompi.mca.coll.base import (
    Outcome,
    next_tag,
    recv_object,
    send_encoded,
    wait,
    wait_all,
)


def bcast(c: CollComm, obj: Any, root: int) -> Any:
    """``obj`` of the root on every member (the root gets a copy too)."""
    run = Outcome(c, "bcast")
    return run.result(_bcast(c, run, obj, root, next_tag(c)))


def _bcast(c: CollComm, run: Outcome, obj: Any, root: int, tag: int) -> Any:
    rank, size = c.rank, c.size
    relative = (rank - root) % size
    mask = 1
    while mask < size:  # receive from the parent: clear the lowest set bit
        if relative & mask:
            obj = run.receive((rank - mask) % size, tag)
            break
        mask <<= 1
    else:
        obj = run.copy(obj)
    mask >>= 1
    sends = []
    encoded = None
    while mask > 0:
        if relative + mask < size:
            encoded = encoded or run.encode(obj, tag)  # encoded once for every child
            sends.append(send_encoded(c, encoded, (rank + mask) % size, tag))
        mask >>= 1
    wait_all(c, sends)
    return obj


def gather(c: CollComm, obj: Any, root: int) -> list[Any] | None:
    """Every member's object, in rank order, at the root (``None`` elsewhere)."""
    run = Outcome(c, "gather")
    gathered = _gather(c, run, obj, root, next_tag(c))
    return run.result(None) if gathered is None else run.results(gathered)


def _gather(c: CollComm, run: Outcome, obj: Any, root: int, tag: int) -> list[Any] | None:
    if c.rank != root:
        wait(c, run.send(obj, root, tag))
        return None
    peers = [peer for peer in range(c.size) if peer != root]
    received = run.values([recv_object(c, peer, tag) for peer in peers])
    received.insert(root, run.copy(obj))
    return received


def scatter(c: CollComm, items: Items | None, root: int) -> Any:
    """Item ``i`` of the root's sequence on rank ``i`` (a bad sequence: a failure for each)."""
    tag = next_tag(c)
    run = Outcome(c, "scatter")
    if c.rank != root:
        return run.result(run.receive(root, tag))
    if items is None:
        raise ValueError("scatter: the root must give a sequence of one object per rank")
    objects = run.items(items, c.size)
    sends = [run.send(objects[peer], peer, tag) for peer in range(c.size) if peer != root]
    wait_all(c, sends)
    return run.result(run.copy(objects[root]))


def allgather(c: CollComm, obj: Any) -> list[Any]:
    """Every member's object, in rank order, on every member (a gather to rank 0, then a
    broadcast of the list; a member's failure reaches everyone inside the list)."""
    run = Outcome(c, "allgather")
    gathered = _gather(c, run, obj, 0, next_tag(c))
    everyone: list[Any] = _bcast(c, run, gathered, 0, next_tag(c))
    return run.results(everyone)


def alltoall(c: CollComm, items: Items) -> list[Any]:
    """Item ``i`` of every member's sequence goes to rank ``i`` (a bad sequence: a failure
    for each)."""
    tag = next_tag(c)
    run = Outcome(c, "alltoall")
    rank, size = c.rank, c.size
    items = run.items(items, size)
    peers = [(rank + step) % size for step in range(1, size)]
    receives = [recv_object(c, peer, tag) for peer in peers]
    sends = [run.send(items[peer], peer, tag) for peer in peers]
    wait_all(c, sends)
    received = dict(zip(peers, run.values(receives), strict=True))
    received[rank] = run.copy(items[rank])
    return run.results([received[p] for p in range(size)])


def reduce(c: CollComm, obj: Any, op: Combine, root: int) -> Any | None:
    """``x0 op x1 op ... op xp-1`` at the root (``None`` elsewhere)."""
    tag = next_tag(c)
    run = Outcome(c, "reduce")
    rank, size = c.rank, c.size
    result = obj
    mask = 1
    while mask < size:
        if rank & mask:  # hand the partial result of ranks rank .. rank+mask-1 to the parent
            wait(c, run.send(result, rank - mask, tag))
            result = None
            break
        if rank + mask < size:
            result = run.combine(op, result, run.receive(rank + mask, tag))
        mask <<= 1
    if root == 0:
        return run.result(_own(run, result, obj) if rank == 0 else None)
    if rank == 0:
        wait(c, run.send(result, root, tag))
        return run.result(None)
    return run.result(run.receive(0, tag) if rank == root else None)


def allreduce(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op x1 op ... op xp-1`` on every member (recursive doubling)."""
    tag = next_tag(c)
    run = Outcome(c, "allreduce")
    rank, size = c.rank, c.size
    pof2 = 1 << (size.bit_length() - 1)
    extra = size - pof2
    result = obj
    if rank < 2 * extra:  # fold pairs (even, odd) into the odd rank
        if rank % 2 == 0:
            wait(c, run.send(result, rank + 1, tag))
            return run.result(run.receive(rank + 1, tag))
        result = run.combine(op, run.receive(rank - 1, tag), result)
        new = rank // 2
    else:
        new = rank - extra
    mask = 1
    while mask < pof2:
        partner = new ^ mask
        peer = partner * 2 + 1 if partner < extra else partner + extra
        theirs = run.exchange(result, peer, tag)
        result = run.combine(op, result, theirs) if peer > rank else run.combine(op, theirs, result)
        mask <<= 1
    if rank < 2 * extra:
        wait(c, run.send(result, rank - 1, tag))
    return run.result(_own(run, result, obj))


def scan(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op ... op xr`` on rank ``r``."""
    return _scan(c, obj, op, exclusive=False)


def exscan(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op ... op xr-1`` on rank ``r``, ``None`` on rank 0."""
    return _scan(c, obj, op, exclusive=True)


def _scan(c: CollComm, obj: Any, op: Combine, *, exclusive: bool) -> Any:
    tag = next_tag(c)
    run = Outcome(c, "exscan" if exclusive else "scan")
    rank, size = c.rank, c.size
    partial = obj  # the reduction of this rank's aligned group so far
    result = None if exclusive else obj
    mask = 1
    while mask < size:
        peer = rank ^ mask
        if peer < size:
            theirs = run.exchange(partial, peer, tag)
            if peer < rank:
                partial = run.combine(op, theirs, partial)
                result = theirs if result is None else run.combine(op, theirs, result)
            else:
                partial = run.combine(op, partial, theirs)
        mask <<= 1
    return run.result(None if result is None else _own(run, result, obj))


def _own(run: Outcome, result: Any, obj: Any) -> Any:
    """``result``, or a copy of it when it is still the caller's own object."""
    return run.copy(result) if result is obj else result
