"""Gather and scatter: binomial trees and linear exchanges (regular blocks of ``n`` bytes).

In the binomial tree rooted at ``root`` the subtree of relative rank ``r`` is the run of
relative ranks ``r .. r + s - 1``, so every message carries a contiguous run of blocks in
relative order: an inner rank gathers its subtree's blocks in a scratch buffer (the root in
its receive buffer when it is rank 0, else in scratch and then rotated into place).  A binomial
gather or scatter takes ``log2 p`` steps instead of ``p-1`` receives at the root: short blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll.base import copy, recv, send

from ..util import Rounds, Subtree, Workspace

Block = Callable[[int], memoryview]


def _relative_store(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, ws: Workspace, root: int, width: int, mine: int, whole: memoryview | None
) -> memoryview:
    """Where this rank keeps its subtree's blocks (relative order), ``mine`` blocks long."""
    if comm.rank == root and root == 0 and whole is not None:
        return whole
    return ws.get(0, mine * width)


def binomial_gather(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    own: memoryview,
    whole: memoryview | None,
    width: int,
    root: int,
) -> Rounds:
    """Blocks up the binomial tree; ``whole`` is the root's receive buffer (all ``p`` blocks)."""
    size = comm.size
    tree = Subtree.of(comm.rank, root, size)
    parent = tree.parent
    if not tree.runs and parent is not None:  # a leaf sends its own block as it is
        yield (send(comm, own, parent, tag),)
        return
    store = _relative_store(comm, ws, root, width, tree.span, whole)
    copy(store[:width], own)
    requests = [
        recv(comm, store[first * width : stop * width], child, tag)
        for child, first, stop in tree.runs
    ]
    if requests:
        yield requests
    if parent is not None:
        yield (send(comm, store[: tree.span * width], parent, tag),)
    elif store is not whole:  # the root, not rank 0: relative order back to rank order
        head = (size - root) * width
        copy(whole[root * width :], store[:head])
        copy(whole[: root * width], store[head : size * width])


def binomial_scatter(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any,
    tag: int,
    ws: Workspace,
    whole: memoryview | None,
    own: memoryview | None,
    width: int,
    root: int,
) -> Rounds:
    """Runs of blocks down the binomial tree; ``own`` is ``None`` at a root ``IN_PLACE``."""
    size = comm.size
    tree = Subtree.of(comm.rank, root, size)
    parent = tree.parent
    if parent is None:
        if root == 0:
            store = whole
        else:  # rotate into relative order once, so every subtree's run is contiguous
            store = ws.get(0, size * width)
            head = (size - root) * width
            copy(store[:head], whole[root * width :])
            copy(store[head:], whole[: root * width])
    elif not tree.runs:
        yield (recv(comm, own, parent, tag),)
        return
    else:
        store = ws.get(0, tree.span * width)
        yield (recv(comm, store, parent, tag),)
    requests = [
        send(comm, store[first * width : stop * width], child, tag)
        for child, first, stop in tree.runs
    ]
    if own is not None:
        copy(own, store[:width])
    if requests:
        yield requests


def linear_gather(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, ws: Workspace, own: memoryview, block: Block | None, root: int
) -> Rounds:
    """Every rank sends its block to the root, which receives them all at once."""
    rank = comm.rank
    if rank != root:
        yield (send(comm, own, root, tag),)
        return
    copy(block(rank), own)
    peers = [peer for peer in range(comm.size) if peer != rank]
    if peers:
        yield [recv(comm, block(peer), peer, tag) for peer in peers]


def linear_scatter(  # noqa: PLR0917 (a schedule's arguments are positional)
    comm: Any, tag: int, ws: Workspace, block: Block | None, own: memoryview | None, root: int
) -> Rounds:
    """The root sends every rank its block at once."""
    rank = comm.rank
    if rank != root:
        yield (recv(comm, own, root, tag),)
        return
    if own is not None:
        copy(own, block(rank))
    peers = [peer for peer in range(comm.size) if peer != rank]
    if peers:
        yield [send(comm, block(peer), peer, tag) for peer in peers]
