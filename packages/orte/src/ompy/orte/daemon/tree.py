"""Who starts whom: the daemons of a job as a tree of bounded fan-out.

The launcher starts at most ``fanout`` daemons itself; each of those starts at most ``fanout``
more, and so on, so starting ``n`` daemons takes about ``log_fanout(n)`` rounds of remote-shell
start-up instead of ``n`` from one process.  The layout is the k-ary heap: with the launcher at
position 0 and the nodes at positions 1..n in allocation order, the children of position ``p``
are the positions ``p * fanout + 1 .. p * fanout + fanout``.  Every daemon connects straight to
the launcher; the tree is only about who runs the remote shell.
"""

from __future__ import annotations

from collections.abc import Sequence

from .protocol import NodeTree


def daemon_tree(nodes: Sequence[tuple[int, str]], fanout: int) -> tuple[NodeTree, ...]:
    """The subtrees the launcher starts itself, for ``nodes`` (``(node id, name)`` in order)."""
    if fanout < 1:
        raise ValueError(f"the fan-out of the daemon tree must be at least 1, got {fanout}")

    def subtree(position: int) -> NodeTree:
        node, name = nodes[position - 1]
        return NodeTree(node, name, children(position))

    def children(position: int) -> tuple[NodeTree, ...]:
        first = position * fanout + 1
        return tuple(subtree(p) for p in range(first, min(first + fanout, len(nodes) + 1)))

    return children(0)
