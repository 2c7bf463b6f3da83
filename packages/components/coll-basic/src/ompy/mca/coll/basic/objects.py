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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.ompi.mca.coll import CollComm, Combine
from ompy.ompi.mca.coll.base import (
    copy_object,
    encode_object,
    finish_recv,
    next_tag,
    receive,
    recv_object,
    recv_stream,
    send_encoded,
    send_object,
    wait,
    wait_all,
)


def bcast(c: CollComm, obj: Any, root: int) -> Any:
    """``obj`` of the root on every member (the root gets a copy too)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    relative = (rank - root) % size
    mask = 1
    while mask < size:  # receive from the parent: clear the lowest set bit
        if relative & mask:
            obj = receive(c, (rank - mask) % size, tag)
            break
        mask <<= 1
    else:
        obj = copy_object(c, obj)
    mask >>= 1
    sends = []
    encoded = None
    while mask > 0:
        if relative + mask < size:
            encoded = encoded or encode_object(c, obj, tag)  # encoded once for every child
            sends.append(send_encoded(c, encoded, (rank + mask) % size, tag))
        mask >>= 1
    wait_all(c, sends)
    return obj


def gather(c: CollComm, obj: Any, root: int) -> list[Any] | None:
    """Every member's object, in rank order, at the root (``None`` elsewhere)."""
    tag = next_tag(c)
    if c.rank != root:
        wait(c, send_object(c, obj, root, tag))
        return None
    receives = {peer: recv_object(c, peer, tag) for peer in range(c.size) if peer != root}
    wait_all(c, list(receives.values()))
    return [copy_object(c, obj) if p == root else receives[p].result for p in range(c.size)]


def scatter(c: CollComm, items: Sequence[Any] | None, root: int) -> Any:
    """Item ``i`` of the root's sequence on rank ``i``."""
    tag = next_tag(c)
    if c.rank != root:
        return receive(c, root, tag)
    if items is None:
        raise ValueError("scatter: the root must give a sequence of one object per rank")
    sends = [send_object(c, items[peer], peer, tag) for peer in range(c.size) if peer != root]
    wait_all(c, sends)
    return copy_object(c, items[root])


def allgather(c: CollComm, obj: Any) -> list[Any]:
    """Every member's object, in rank order, on every member."""
    gathered: list[Any] = bcast(c, gather(c, obj, 0), 0)
    return gathered


def alltoall(c: CollComm, items: Sequence[Any]) -> list[Any]:
    """Item ``i`` of every member's sequence goes to rank ``i``."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    peers = [(rank + step) % size for step in range(1, size)]
    receives = {peer: recv_object(c, peer, tag) for peer in peers}
    sends = [send_object(c, items[peer], peer, tag) for peer in peers]
    wait_all(c, [*receives.values(), *sends])
    return [copy_object(c, items[rank]) if p == rank else receives[p].result for p in range(size)]


def reduce(c: CollComm, obj: Any, op: Combine, root: int) -> Any | None:
    """``x0 op x1 op ... op xp-1`` at the root (``None`` elsewhere)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    result = obj
    mask = 1
    while mask < size:
        if rank & mask:  # hand the partial result of ranks rank .. rank+mask-1 to the parent
            wait(c, send_object(c, result, rank - mask, tag))
            result = None
            break
        if rank + mask < size:
            result = op(result, receive(c, rank + mask, tag))
        mask <<= 1
    if root == 0:
        return _own(c, result, obj) if rank == 0 else None
    if rank == 0:
        wait(c, send_object(c, result, root, tag))
        return None
    return receive(c, 0, tag) if rank == root else None


def allreduce(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op x1 op ... op xp-1`` on every member (recursive doubling)."""
    tag = next_tag(c)
    rank, size = c.rank, c.size
    pof2 = 1 << (size.bit_length() - 1)
    extra = size - pof2
    result = obj
    if rank < 2 * extra:  # fold pairs (even, odd) into the odd rank
        if rank % 2 == 0:
            wait(c, send_object(c, result, rank + 1, tag))
            return receive(c, rank + 1, tag)
        result = op(receive(c, rank - 1, tag), result)
        new = rank // 2
    else:
        new = rank - extra
    mask = 1
    while mask < pof2:
        partner = new ^ mask
        peer = partner * 2 + 1 if partner < extra else partner + extra
        theirs = _exchange(c, result, peer, tag)
        result = op(result, theirs) if peer > rank else op(theirs, result)
        mask <<= 1
    if rank < 2 * extra:
        wait(c, send_object(c, result, rank - 1, tag))
    return _own(c, result, obj)


def scan(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op ... op xr`` on rank ``r``."""
    return _scan(c, obj, op, exclusive=False)


def exscan(c: CollComm, obj: Any, op: Combine) -> Any:
    """``x0 op ... op xr-1`` on rank ``r``, ``None`` on rank 0."""
    return _scan(c, obj, op, exclusive=True)


def _scan(c: CollComm, obj: Any, op: Combine, *, exclusive: bool) -> Any:
    tag = next_tag(c)
    rank, size = c.rank, c.size
    partial = obj  # the reduction of this rank's aligned group so far
    result = None if exclusive else obj
    mask = 1
    while mask < size:
        peer = rank ^ mask
        if peer < size:
            theirs = _exchange(c, partial, peer, tag)
            if peer < rank:
                partial = op(theirs, partial)
                result = theirs if result is None else op(theirs, result)
            else:
                partial = op(partial, theirs)
        mask <<= 1
    return None if result is None else _own(c, result, obj)


def _exchange(c: CollComm, obj: Any, peer: int, tag: int) -> Any:
    """Send ``obj`` to ``peer`` and receive its object, both in flight together."""
    incoming = recv_stream(c, peer, tag)
    outgoing = send_object(c, obj, peer, tag)
    try:
        theirs = finish_recv(c, incoming)
    finally:  # the send completes whatever the receive did (a failure leaves no send behind)
        wait(c, outgoing)
    return theirs


def _own(c: CollComm, result: Any, obj: Any) -> Any:
    """``result``, or a copy of it when it is still the caller's own object."""
    return copy_object(c, result) if result is obj else result
