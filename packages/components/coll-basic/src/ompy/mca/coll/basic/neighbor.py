"""Neighbor collectives: one message per edge of the topology, all in one round.

Like Open MPI's ``coll/basic`` neighbor algorithms (and the linear schedules of its libnbc):
every member posts one receive per incoming edge and starts one send per outgoing edge at once,
then waits for all of them.  The edges and the order of their receives are the communicator's
:class:`~ompy.ompi.mca.coll.base.Neighborhood` (the topology's lists, ``PROC_NULL`` edges
skipped, the receives of a Cartesian dimension posted swapped so that duplicate edges match as
MPI defines), which the module computes once and passes in.  Written as schedules, so the same
code serves the blocking and the nonblocking forms.

The object forms move one message per *distinct* neighbour, holding the objects of every edge
to it in edge order: two objects from one process on one tag could otherwise mix their
out-of-band buffers (the object transport assumes one object per pair and call).  A member
whose part fails still plays it to the end (:class:`~ompy.ompi.mca.coll.base.Outcome`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ompy.ompi.constants import PROC_NULL
from ompy.ompi.errors import ERR_TRUNCATE
from ompy.ompi.errors import Exception as MPIException
from ompy.ompi.mca.coll import CollComm, Items
from ompy.ompi.mca.coll.base import (
    Failure,
    Neighborhood,
    Outcome,
    next_tag,
    recv,
    recv_object,
    send,
    send_encoded,
    wait_all,
)

from .rooted import Rounds


def _exchange(comm: Any, tag: int, edges: Neighborhood, outgoing: Any, incoming: Any) -> Rounds:
    """Send ``outgoing(i)`` along out-edge ``i`` and receive ``incoming(j)`` on in-edge ``j``."""
    requests = [recv(comm, incoming(block), source, tag) for block, source in edges.receives()]
    requests.extend(send(comm, outgoing(block), dest, tag) for block, dest in edges.sends())
    if requests:
        yield requests


def neighbor_allgather(
    comm: Any, tag: int, edges: Neighborhood, sendspec: Any, recvspec: Any
) -> Rounds:
    """``neighbor_allgather(v)``: this member's block to every out-neighbour."""
    view = sendspec.view
    yield from _exchange(comm, tag, edges, lambda _: view, recvspec.block)


def neighbor_alltoall(
    comm: Any, tag: int, edges: Neighborhood, sendspec: Any, recvspec: Any
) -> Rounds:
    """``neighbor_alltoall(v)``: send block ``i`` to out-neighbour ``i``."""
    yield from _exchange(comm, tag, edges, sendspec.block, recvspec.block)


def neighbor_alltoallw(
    comm: Any, tag: int, edges: Neighborhood, sendspecs: Any, recvspecs: Any
) -> Rounds:
    """``neighbor_alltoallw``: as alltoall, with one datatype and byte displacement per edge."""
    yield from _exchange(
        comm,
        tag,
        edges,
        lambda block: sendspecs[block].view,
        lambda block: recvspecs[block].view,
    )


# -- Python objects ------------------------------------------------------------------------------


def _grouped(peers: Sequence[int], blocks: Any) -> dict[int, list[int]]:
    """Peer -> its edges' blocks, in ``blocks`` order (first appearance orders the peers)."""
    groups: dict[int, list[int]] = {}
    for block in blocks:
        peer = peers[block]
        if peer != PROC_NULL:
            groups.setdefault(peer, []).append(block)
    return groups


def _exchange_objects(
    c: CollComm, run: Outcome, edges: Neighborhood, outgoing: Any, *, allgather: bool
) -> list[Any]:
    """Send each out-neighbour the list of objects of its edges, receive theirs, unpack.

    ``outgoing(blocks)`` gives what goes to a neighbour reached by the edges ``blocks`` (one
    object per edge; for an allgather, one object for all of them).  Every step goes through
    the call's :class:`~ompy.ompi.mca.coll.base.Outcome`: a member whose objects do not
    pickle, or whose neighbour's do not unpickle, still sends and receives everything, and
    every member concerned raises at the end instead of some waiting forever.
    """
    tag = next_tag(c)
    name, rank = run.call, c.rank
    incoming = _grouped(edges.sources, edges.receive_order)
    peers = [peer for peer in incoming if peer != rank]
    receives = [recv_object(c, peer, tag) for peer in peers]
    destinations = _grouped(edges.destinations, range(len(edges.destinations)))
    sends = []
    encoded = None
    for peer, blocks in destinations.items():
        if peer == rank:
            continue
        if allgather:  # the same object for every neighbour: encoded once
            encoded = encoded or run.encode(outgoing(blocks), tag)
            sends.append(send_encoded(c, encoded, peer, tag))
        else:
            sends.append(run.send(outgoing(blocks), peer, tag))
    wait_all(c, sends)
    received = dict(zip(peers, run.values(receives), strict=True))
    if rank in incoming:
        received[rank] = run.copy(outgoing(destinations.get(rank, [])))
    result: list[Any] = [None] * len(edges.sources)
    for peer, blocks in incoming.items():
        items = received[peer]
        if allgather or type(items) is Failure:
            for block in blocks:  # one object for every edge from peer; each gets its own
                result[block] = items if block == blocks[0] else run.copy(items)
            continue
        if len(items) != len(blocks):
            raise MPIException(
                ERR_TRUNCATE,
                f"{name}: rank {peer} sent {len(items)} objects on its edges to rank {rank}, "
                f"which has {len(blocks)} edges from it; the topology's edges do not match "
                "(each edge must be listed at both of its ends)",
            )
        for block, item in zip(blocks, items, strict=True):
            result[block] = item
    return run.results(result)


def neighbor_allgather_object(c: CollComm, edges: Neighborhood, obj: Any) -> list[Any]:
    """Every in-neighbour's object, one per in-edge (``None`` for a ``PROC_NULL`` edge)."""
    run = Outcome(c, "neighbor_allgather")
    return _exchange_objects(c, run, edges, lambda _: obj, allgather=True)


def neighbor_alltoall_object(c: CollComm, edges: Neighborhood, items: Items) -> list[Any]:
    """Item ``i`` goes along out-edge ``i``; one object per in-edge (``None`` for PROC_NULL).
    A bad sequence (its check's error) sends a failure along every edge."""
    run = Outcome(c, "neighbor_alltoall")
    objects = run.items(items, len(edges.destinations))
    return _exchange_objects(
        c, run, edges, lambda blocks: [objects[b] for b in blocks], allgather=False
    )
