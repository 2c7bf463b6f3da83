"""The persistent collectives on an intercommunicator: each operation as a plan recorded at init.

The shapes are those of :mod:`.schedules` (across the groups on the intercommunicator, within
a group on its ``local_comm`` with the request's tag), written against a
:class:`~ompy.ompi.mca.coll.base.PlanBuilder` instead of as generators: each function runs
once, at ``<op>_init``, finds the peers, allocates the scratch space, looks the reduction
kernel up and binds every transfer; every ``Start`` replays the plan (see
:mod:`ompy.ompi.mca.coll.base.persistent`).  A process that takes no part
(``root=PROC_NULL``) gets an empty plan: its starts complete at once.

Between starts the plan reads the program's buffers again (a send reads its view when it is
posted, a reduction's first combination reads the input then), so a program may change its
send buffer between starts, as MPI allows.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.constants import PROC_NULL, ROOT
from ompy.ompi.mca.coll.base import PlanBuilder, binomial_children, binomial_parent

from .schedules import local_of

_NOTHING = memoryview(b"")


# -- steps within one group ------------------------------------------------------------------------


def _fan_in(b: PlanBuilder, local: Any) -> None:
    """Empty messages up the binomial tree of ``local`` to its rank 0."""
    for child in binomial_children(local.rank, 0, local.size):
        b.recv(b.scratch(0), child, over=local)
    b.wait()
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        b.send(_NOTHING, parent, over=local)
        b.wait()


def _fan_out(b: PlanBuilder, local: Any) -> None:
    """Empty messages down the binomial tree of ``local`` from its rank 0."""
    _local_bcast(b, local, _NOTHING, b.scratch(0))


def _local_bcast(b: PlanBuilder, local: Any, outgoing: memoryview, incoming: memoryview) -> None:
    """``incoming`` (``outgoing`` at rank 0) down the binomial tree of ``local`` from rank 0."""
    parent = binomial_parent(local.rank, 0, local.size)
    view = outgoing
    if parent is not None:
        b.recv(incoming, parent, over=local)
        b.wait()
        view = incoming
    for child in binomial_children(local.rank, 0, local.size):
        b.send(view, child, over=local)
    b.wait()


def _reduce_to_leader(b: PlanBuilder, local: Any, spec: Any, op: Any) -> memoryview:
    """Binomial reduction of every member's ``spec`` to rank 0 of ``local``; the view holding
    the result there (a partial result elsewhere).

    A node combines its data with its children's partial results nearest child first (their
    subtrees are the next runs of ranks), so the result is ``x0 op x1 op ...`` in rank order
    and non-commutative operations are right.  ``spec`` is only read.
    """
    accumulated = spec.view
    children = binomial_children(local.rank, 0, local.size)[::-1]  # nearest first
    if children:
        partials = [b.scratch(spec.view.nbytes) for _ in children]
        for partial, child in zip(partials, children, strict=True):
            b.recv(partial, child, over=local)
        b.wait()
        for partial in partials:
            b.combine(op, spec.datatype, accumulated, partial, spec.count)  # partial = mine op it
            accumulated = partial
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        b.send(accumulated, parent, over=local)
        b.wait()
    return accumulated


# -- the operations -------------------------------------------------------------------------------


def barrier(b: PlanBuilder) -> None:
    """Fan-in in each group, the leaders swap an empty message, fan-out."""
    local = local_of(b.comm)
    _fan_in(b, local)
    if local.rank == 0:
        b.send(_NOTHING, 0)
        b.recv(b.scratch(0), 0)
        b.wait()
    _fan_out(b, local)


def bcast(b: PlanBuilder, spec: Any, root: int) -> None:
    """The root sends to rank 0 of the other group, which broadcasts down its binomial tree."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        b.send(spec.view, 0)
        b.wait()
        return
    local = local_of(b.comm)
    if local.rank == 0:
        b.recv(spec.view, root)
        b.wait()
    _local_bcast(b, local, spec.view, spec.view)


def gather(b: PlanBuilder, sendspec: Any, recvspec: Any, root: int) -> None:
    """``gather``/``gatherv``: every process of the other group sends its block to the root."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        for peer in range(b.comm.remote_size):
            b.recv(recvspec.block(peer), peer)
    else:
        b.send(sendspec.view, root)
    b.wait()


def scatter(b: PlanBuilder, sendspec: Any, recvspec: Any, root: int) -> None:
    """``scatter``/``scatterv``: the root sends block ``i`` to rank ``i`` of the other group."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        for peer in range(b.comm.remote_size):
            b.send(sendspec.block(peer), peer)
    else:
        b.recv(recvspec.view, root)
    b.wait()


def allgather(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``allgather``/``allgatherv``: every process sends its block to every remote process."""
    for peer in range(b.comm.remote_size):
        b.recv(recvspec.block(peer), peer)
    for peer in range(b.comm.remote_size):
        b.send(sendspec.view, peer)
    b.wait()


def alltoall(b: PlanBuilder, sendspec: Any, recvspec: Any) -> None:
    """``alltoall``/``alltoallv``: block ``i`` to remote rank ``i``, block ``j`` from ``j``."""
    for peer in range(b.comm.remote_size):
        b.recv(recvspec.block(peer), peer)
    for peer in range(b.comm.remote_size):
        b.send(sendspec.block(peer), peer)
    b.wait()


def alltoallw(b: PlanBuilder, sendspecs: Any, recvspecs: Any) -> None:
    """``alltoallw``: as alltoall, a spec (count and datatype) per remote rank."""
    for peer in range(b.comm.remote_size):
        b.recv(recvspecs[peer].view, peer)
    for peer in range(b.comm.remote_size):
        b.send(sendspecs[peer].view, peer)
    b.wait()


def reduce(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any, root: int) -> None:
    """The other group reduces to its rank 0, which sends the result to the root."""
    if root == PROC_NULL:
        return
    if root == ROOT:
        b.recv(recvspec.view, 0)
        b.wait()
        return
    local = local_of(b.comm)
    result = _reduce_to_leader(b, local, sendspec, op)
    if local.rank == 0:
        b.send(result, root)
        b.wait()


def allreduce(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """Each group reduces to its rank 0, the leaders swap the results, each broadcasts in its
    group what it received."""
    local = local_of(b.comm)
    result = _reduce_to_leader(b, local, sendspec, op)
    if local.rank == 0:
        b.send(result, 0)
        b.recv(recvspec.view, 0)
        b.wait()
    _local_bcast(b, local, recvspec.view, recvspec.view)


def _scatter_result(
    b: PlanBuilder, sendspec: Any, recvspec: Any, counts: tuple[int, ...], op: Any
) -> None:
    """Reduce ``sendspec`` in this group, swap with the other group's leader, and scatter the
    other group's result over this group, ``counts[i]`` elements to rank ``i``."""
    local = local_of(b.comm)
    result = _reduce_to_leader(b, local, sendspec, op)
    if local.rank != 0:
        b.recv(recvspec.view, 0, over=local)
        b.wait()
        return
    theirs = b.scratch(result.nbytes)
    b.send(result, 0)
    b.recv(theirs, 0)
    b.wait()
    width = sendspec.datatype.extent
    starts = [0]
    for count in counts:
        starts.append(starts[-1] + count * width)
    b.copy(recvspec.view, theirs[starts[0] : starts[1]])
    for peer in range(1, local.size):
        b.send(theirs[starts[peer] : starts[peer + 1]], peer, over=local)
    b.wait()


def reduce_scatter_block(b: PlanBuilder, sendspec: Any, recvspec: Any, op: Any) -> None:
    """``recvspec.count`` elements of the other group's reduction to each process of this
    group."""
    _scatter_result(b, sendspec, recvspec, (recvspec.count,) * b.size, op)


def reduce_scatter(
    b: PlanBuilder, sendspec: Any, recvspec: Any, recvcounts: tuple[int, ...], op: Any
) -> None:
    """``recvcounts[i]`` elements of the other group's reduction to rank ``i`` of this
    group."""
    _scatter_result(b, sendspec, recvspec, tuple(recvcounts), op)
