"""``None`` as a collective's buffer: ``MPI.IN_PLACE`` where mpi4py reads it so, else an error.

mpi4py reads ``None`` as ``MPI.IN_PLACE`` exactly where ``IN_PLACE`` is allowed: the send buffer
of ``Allgather(v)``, ``Alltoall(v/w)``, ``Allreduce``, ``Reduce_scatter(_block)``, ``Scan`` and
``Exscan``, the root's send buffer of ``Gather(v)`` and ``Reduce`` and the root's receive buffer
of ``Scatter(v)``.  Anywhere else a bare ``None`` is not a message and raises ``TypeError`` (a
buffer the call ignores, such as a non-root's receive buffer of ``Gather``, may be anything).

Both are decided from the caller's own arguments before any communication, so when every rank
passes ``None`` where it is not allowed, every rank raises and none is left waiting in the
collective.
"""

from __future__ import annotations

from typing import Any

from ..constants import IN_PLACE


def or_in_place(buf: Any) -> Any:
    """``buf``, with ``None`` read as ``MPI.IN_PLACE``."""
    return IN_PLACE if buf is None else buf


def given(buf: Any, call: str, what: str) -> Any:
    """``buf``, which must not be ``None`` here (a message must be given)."""
    if buf is None:
        raise TypeError(
            f"{call}: {what} is None; a message (a buffer, or a list/tuple [buffer, count, "
            "datatype]) must be given here (None means MPI.IN_PLACE only where IN_PLACE is "
            "allowed)"
        )
    return buf
