"""The buffer collectives on an intercommunicator, each written once as a schedule.

A schedule (:mod:`ompy.ompi.mca.coll.base.schedule`) is a generator of rounds of
point-to-point requests; the component runs it blocking (``run_schedule``) or starts it on the
progress engine (``start_schedule``).  Two kinds of step make every operation, as in Open MPI's
``coll/inter``:

- *across*: point to point on the intercommunicator itself, which addresses the other group;
- *within*: point to point on the intercommunicator's local communicator (``local_comm``, the
  private intracommunicator over this process's group), on the same tag as the call: that tag
  is drawn for this call on the intercommunicator, and nothing else uses the local
  communicator's collective tags, so two calls in flight never share one.

The shapes:

- ``barrier``: binomial fan-in to each group's rank 0, the two leaders swap an empty message,
  binomial fan-out: nobody leaves before every process of both groups has arrived;
- ``bcast``: the root sends to rank 0 of the other group, which broadcasts it down a binomial
  tree of its group;
- ``gather(v)``, ``scatter(v)``: the root and every process of the other group, one round;
- ``allgather(v)``, ``alltoall(v/w)``: every pair across the groups, one round;
- ``reduce``: a binomial reduction to rank 0 of the sending group (rank order kept, so a
  non-commutative operation gives ``x0 op x1 op ...``), which sends the result to the root;
- ``allreduce``: both groups reduce to their rank 0, the leaders swap the results, each
  broadcasts what it received in its group;
- ``reduce_scatter(_block)``: as allreduce, but the leader scatters the other group's result
  over its group by the receive counts.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ompy.ompi.constants import PROC_NULL, ROOT
from ompy.ompi.mca.coll.base import (
    binomial_children,
    binomial_parent,
    combine,
    copy,
    recv,
    scratch,
    send,
)
from ompy.ompi.mca.coll.base.helpers import binomial_bcast

Rounds = Generator[Any, None, Any]

_EMPTY = memoryview(b"")


def _space() -> memoryview:
    return memoryview(bytearray(0))


def local_of(comm: Any) -> Any:
    local = comm.local_comm
    if local is None:
        raise ValueError(
            f"coll inter: {comm.name!r} has no local communicator; it is not an intercommunicator"
        )
    return local


# -- steps within one group ------------------------------------------------------------------------


def fan_in(local: Any, tag: int) -> Rounds:
    """Empty messages up the binomial tree of ``local`` to its rank 0."""
    children = binomial_children(local.rank, 0, local.size)
    if children:
        yield [recv(local, _space(), child, tag) for child in children]
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        yield (send(local, _EMPTY, parent, tag),)


def fan_out(local: Any, tag: int) -> Rounds:
    """Empty messages down the binomial tree of ``local`` from its rank 0."""
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        yield (recv(local, _space(), parent, tag),)
    children = binomial_children(local.rank, 0, local.size)
    if children:
        yield [send(local, _EMPTY, child, tag) for child in children]


def reduce_to_leader(  # noqa: PLR0917 (a schedule's arguments are positional)
    local: Any, tag: int, source: memoryview, count: int, datatype: Any, op: Any
) -> Rounds:
    """Binomial reduction of every member's ``source`` to rank 0 of ``local``.

    Returns the result at rank 0 (a fresh view), a partial result elsewhere.  A node takes its
    children nearest first: the subtree of each is the next run of ranks after everything
    combined so far, so the order is the ranks' order.
    """
    mine = scratch(source.nbytes)
    copy(mine, source)
    children = binomial_children(local.rank, 0, local.size)[::-1]  # nearest first
    if children:
        parts = [scratch(source.nbytes) for _ in children]
        yield [recv(local, part, child, tag) for part, child in zip(parts, children, strict=True)]
        for part in parts:
            combine(local, op, datatype, mine, part, count)  # part = (lower ranks) op part
            mine = part
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        yield (send(local, mine, parent, tag),)
    return mine


# -- the operations -------------------------------------------------------------------------------


def barrier(comm: Any, tag: int) -> Rounds:
    """``barrier``: fan-in in each group, the leaders swap, fan-out."""
    local = local_of(comm)
    yield from fan_in(local, tag)
    if local.rank == 0:
        yield (send(comm, _EMPTY, 0, tag), recv(comm, _space(), 0, tag))
    yield from fan_out(local, tag)


def bcast(comm: Any, tag: int, spec: Any, root: int) -> Rounds:
    """``bcast``: root -> rank 0 of the other group -> its binomial tree."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        yield (send(comm, spec.view, 0, tag),)
        return
    local = local_of(comm)
    if local.rank == 0:
        yield (recv(comm, spec.view, root, tag),)
    yield from binomial_bcast(local, tag, spec.view, 0)


def gather(comm: Any, tag: int, sendspec: Any, recvspec: Any, root: int) -> Rounds:
    """``gather``/``gatherv``: every process of the other group sends its block to the root."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        yield [recv(comm, recvspec.block(peer), peer, tag) for peer in range(comm.remote_size)]
        return
    yield (send(comm, sendspec.view, root, tag),)


def scatter(comm: Any, tag: int, sendspec: Any, recvspec: Any, root: int) -> Rounds:
    """``scatter``/``scatterv``: the root sends block ``i`` to rank ``i`` of the other group."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        yield [send(comm, sendspec.block(peer), peer, tag) for peer in range(comm.remote_size)]
        return
    yield (recv(comm, recvspec.view, root, tag),)


def allgather(comm: Any, tag: int, sendspec: Any, recvspec: Any) -> Rounds:
    """``allgather``/``allgatherv``: every process sends its block to every remote process."""
    peers = range(comm.remote_size)
    receives = [recv(comm, recvspec.block(peer), peer, tag) for peer in peers]
    yield receives + [send(comm, sendspec.view, peer, tag) for peer in peers]


def alltoall(comm: Any, tag: int, sendspec: Any, recvspec: Any) -> Rounds:
    """``alltoall``/``alltoallv``: block ``i`` to remote rank ``i``, block ``j`` from ``j``."""
    peers = range(comm.remote_size)
    receives = [recv(comm, recvspec.block(peer), peer, tag) for peer in peers]
    yield receives + [send(comm, sendspec.block(peer), peer, tag) for peer in peers]


def alltoallw(comm: Any, tag: int, sendspecs: Any, recvspecs: Any) -> Rounds:
    """``alltoallw``: as alltoall, a spec (count and datatype) per remote rank."""
    peers = range(comm.remote_size)
    receives = [recv(comm, recvspecs[peer].view, peer, tag) for peer in peers]
    yield receives + [send(comm, sendspecs[peer].view, peer, tag) for peer in peers]


def reduce(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any, root: int
) -> Rounds:
    """``reduce``: the other group reduces to its rank 0, which sends the result to the root."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        yield (recv(comm, recvspec.view, 0, tag),)
        return
    local = local_of(comm)
    result = yield from reduce_to_leader(
        local, tag, sendspec.view, sendspec.count, sendspec.datatype, op
    )
    if local.rank == 0:
        yield (send(comm, result, root, tag),)


def allreduce(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``allreduce``: reduce in each group, the leaders swap results, broadcast in each group."""
    local = local_of(comm)
    result = yield from reduce_to_leader(
        local, tag, sendspec.view, sendspec.count, sendspec.datatype, op
    )
    if local.rank == 0:
        yield (send(comm, result, 0, tag), recv(comm, recvspec.view, 0, tag))
    yield from binomial_bcast(local, tag, recvspec.view, 0)


def _scatter_result(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, sendspec: Any, recvspec: Any, counts: tuple[int, ...], op: Any
) -> Rounds:
    """Reduce ``sendspec`` in this group, swap with the other group's leader, and scatter the
    other group's result over this group, ``counts[i]`` elements to rank ``i``."""
    local = local_of(comm)
    result = yield from reduce_to_leader(
        local, tag, sendspec.view, sendspec.count, sendspec.datatype, op
    )
    if local.rank != 0:
        yield (recv(local, recvspec.view, 0, tag),)
        return
    theirs = scratch(result.nbytes)
    yield (send(comm, result, 0, tag), recv(comm, theirs, 0, tag))
    width = sendspec.datatype.extent
    starts = [0]
    for count in counts:
        starts.append(starts[-1] + count * width)
    copy(recvspec.view, theirs[starts[0] : starts[1]])
    sends = [
        send(local, theirs[starts[peer] : starts[peer + 1]], peer, tag)
        for peer in range(1, local.size)
    ]
    if sends:
        yield sends


def reduce_scatter_block(comm: Any, tag: int, sendspec: Any, recvspec: Any, op: Any) -> Rounds:
    """``reduce_scatter_block``: ``recvspec.count`` elements of the other group's reduction to
    each process of this group."""
    counts = (recvspec.count,) * comm.size
    yield from _scatter_result(comm, tag, sendspec, recvspec, counts, op)


def reduce_scatter(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, sendspec: Any, recvspec: Any, recvcounts: tuple[int, ...], op: Any
) -> Rounds:
    """``reduce_scatter``: ``recvcounts[i]`` elements of the other group's reduction to rank
    ``i`` of this group."""
    yield from _scatter_result(comm, tag, sendspec, recvspec, tuple(recvcounts), op)
