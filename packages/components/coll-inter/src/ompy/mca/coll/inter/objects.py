"""The object operations (lowercase collectives) on an intercommunicator.

Each call draws one tag on the intercommunicator (:func:`~ompy.ompi.mca.coll.base.next_tag`)
and uses it both across (on the intercommunicator, which addresses the other group) and within
a group (on its local communicator, see :mod:`.schedules`).  Objects travel through the
instance's codec with the coll base's object transport.  The results are mpi4py's for an
intercommunicator: the root's side of ``bcast``/``scatter`` gets None, ``gather``/``reduce``
give the result at ``ROOT`` only, ``allgather``/``alltoall`` give lists over the remote group
and ``allreduce`` gives each group the reduction of the other group's objects (reduced in rank
order: ``op`` need only be associative).
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.constants import PROC_NULL, ROOT
from ompy.ompi.mca.coll import Combine, Items
from ompy.ompi.mca.coll.base import (
    binomial_children,
    binomial_parent,
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

from .schedules import local_of


def _spread(local: Any, obj: Any, tag: int) -> Any:
    """``obj`` of ``local``'s rank 0 on every member (down a binomial tree; encoded once)."""
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        obj = receive(local, parent, tag)
    children = binomial_children(local.rank, 0, local.size)
    if children:
        encoded = encode_object(local, obj, tag)
        wait_all(local, [send_encoded(local, encoded, child, tag) for child in children])
    return obj


def _fold(local: Any, obj: Any, op: Combine, tag: int) -> Any:
    """Every member's ``obj`` reduced in rank order at ``local``'s rank 0 (binomial tree);
    the partial result elsewhere."""
    result = obj
    for child in binomial_children(local.rank, 0, local.size)[::-1]:  # nearest first
        result = op(result, receive(local, child, tag))
    parent = binomial_parent(local.rank, 0, local.size)
    if parent is not None:
        wait(local, send_object(local, result, parent, tag))
    return result


def bcast(comm: Any, obj: Any, root: int) -> Any:
    """The root's object on every process of the other group (None in the root's group)."""
    tag = next_tag(comm)
    if root == PROC_NULL:
        return None
    if root == ROOT:
        wait(comm, send_object(comm, obj, 0, tag))
        return None
    local = local_of(comm)
    if local.rank == 0:
        obj = receive(comm, root, tag)
    return _spread(local, obj, tag)


def gather(comm: Any, obj: Any, root: int) -> list[Any] | None:
    """The other group's objects in its rank order, at the root (None elsewhere)."""
    tag = next_tag(comm)
    if root == PROC_NULL:
        return None
    if root == ROOT:
        receives = [recv_object(comm, peer, tag) for peer in range(comm.remote_size)]
        wait_all(comm, receives)
        return [received.result for received in receives]
    wait(comm, send_object(comm, obj, root, tag))
    return None


def scatter(comm: Any, items: Items | None, root: int) -> Any:
    """Item ``i`` of the root's sequence to rank ``i`` of the other group (None at the root's
    group).  A bad sequence (its check's error) is raised at the root before anything is sent:
    the object operations between the groups carry no failures to the peers."""
    tag = next_tag(comm)
    if root == PROC_NULL:
        return None
    if root == ROOT:
        assert items is not None  # the API checked the root's sequence
        if isinstance(items, Exception):
            raise items
        wait_all(comm, [send_object(comm, item, peer, tag) for peer, item in enumerate(items)])
        return None
    return receive(comm, root, tag)


def allgather(comm: Any, obj: Any) -> list[Any]:
    """The object of every process of the other group, in its rank order."""
    tag = next_tag(comm)
    peers = range(comm.remote_size)
    receives = [recv_object(comm, peer, tag) for peer in peers]
    encoded = encode_object(comm, obj, tag)
    sends = [send_encoded(comm, encoded, peer, tag) for peer in peers]
    wait_all(comm, [*receives, *sends])
    return [received.result for received in receives]


def alltoall(comm: Any, items: Items) -> list[Any]:
    """Item ``i`` to remote rank ``i``; one object from each remote rank, in its rank order.
    A bad sequence (its check's error) is raised before anything is sent (as ``scatter``)."""
    tag = next_tag(comm)
    if isinstance(items, Exception):
        raise items
    receives = [recv_object(comm, peer, tag) for peer in range(comm.remote_size)]
    sends = [send_object(comm, item, peer, tag) for peer, item in enumerate(items)]
    wait_all(comm, [*receives, *sends])
    return [received.result for received in receives]


def reduce(comm: Any, obj: Any, op: Combine, root: int) -> Any:
    """The other group's objects reduced in rank order, at the root (None elsewhere)."""
    tag = next_tag(comm)
    if root == PROC_NULL:
        return None
    if root == ROOT:
        return receive(comm, 0, tag)
    local = local_of(comm)
    result = _fold(local, obj, op, tag)
    if local.rank == 0:
        wait(comm, send_object(comm, result, root, tag))
    return None


def allreduce(comm: Any, obj: Any, op: Combine) -> Any:
    """The other group's objects reduced in rank order, on every process of this group."""
    tag = next_tag(comm)
    local = local_of(comm)
    result = _fold(local, obj, op, tag)
    theirs = None
    if local.rank == 0:
        stream = recv_stream(comm, 0, tag)  # posted first: in matching order
        sent = send_object(comm, result, 0, tag)
        theirs = finish_recv(comm, stream)
        wait(comm, sent)
    return _spread(local, theirs, tag)
