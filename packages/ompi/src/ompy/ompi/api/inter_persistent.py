"""Persistent collectives on an intercommunicator: ``Intercomm.Barrier_init`` ..
``Reduce_scatter_init`` (mpi4py has every ``X_init`` on ``Comm``; ``Scan_init`` and
``Exscan_init`` are ``Intracomm``'s only, as MPI defines no scan between two groups).

Each ``X_init`` checks its arguments exactly as the intercommunicator's ``X`` does (the
argument functions of :class:`~.inter_collective.InterCollectives`: ``ROOT``/``PROC_NULL``
roots, blocks per *remote* rank, no ``IN_PLACE``), plus ``info``, and hands the parsed buffers
to the coll table's ``x_init`` (``ompy-coll-inter`` records a plan once, see
:mod:`ompy.mca.coll.inter.persistent`).  The request it returns behaves as on an
intracommunicator (:mod:`.persistent_collectives`: ``Start``/``Startall`` many times, ``Free``
only when inactive, its own tag taken at init so starts may come in any order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..op import SUM, Op
from .info import INFO_NULL, Info
from .inter_collective import InterCollectives
from .persistent_collectives import _begin, _initialize
from .request import Prequest


class InterPersistentCollectives:
    """The persistent half of :class:`~.intercomm.Intercomm` (with :class:`.InterCollectives`,
    whose argument functions it shares)."""

    __slots__ = ()

    def Barrier_init(self, info: Info = INFO_NULL) -> Prequest:
        """Persistent Barrier (every process of both groups)."""
        call = "Comm.Barrier_init"
        c = _begin(self, call, info)
        return _initialize(call, "barrier", (c, (), None))

    def Bcast_init(self, buf: Any, root: int = 0, info: Info = INFO_NULL) -> Prequest:
        """Persistent Broadcast from the root (root=ROOT) to every process of the other group."""
        call = "Comm.Bcast_init"
        _begin(self, call, info)
        return _initialize(call, "bcast", _inter(self)._bcast_args(call, buf, root))

    def Gather_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Gather from every process of the other group to the root."""
        call = "Comm.Gather_init"
        _begin(self, call, info)
        return _initialize(call, "gather", _inter(self)._gather_args(call, sendbuf, recvbuf, root))

    def Gatherv_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Gather Vector."""
        call = "Comm.Gatherv_init"
        _begin(self, call, info)
        parsed = _inter(self)._gather_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "gatherv", parsed)

    def Scatter_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Scatter from the root to every process of the other group."""
        call = "Comm.Scatter_init"
        _begin(self, call, info)
        parsed = _inter(self)._scatter_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "scatter", parsed)

    def Scatterv_init(
        self, sendbuf: Any, recvbuf: Any, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Scatter Vector."""
        call = "Comm.Scatterv_init"
        _begin(self, call, info)
        parsed = _inter(self)._scatter_args(call, sendbuf, recvbuf, root)
        return _initialize(call, "scatterv", parsed)

    def Allgather_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent Gather to All: one block from each process of the other group."""
        call = "Comm.Allgather_init"
        _begin(self, call, info)
        parsed = _inter(self)._allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "allgather", parsed)

    def Allgatherv_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent Gather to All Vector."""
        call = "Comm.Allgatherv_init"
        _begin(self, call, info)
        parsed = _inter(self)._allgather_args(call, sendbuf, recvbuf)
        return _initialize(call, "allgatherv", parsed)

    def Alltoall_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All across the groups."""
        call = "Comm.Alltoall_init"
        _begin(self, call, info)
        parsed = _inter(self)._alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoall", parsed)

    def Alltoallv_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All Vector."""
        call = "Comm.Alltoallv_init"
        _begin(self, call, info)
        parsed = _inter(self)._alltoall_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoallv", parsed)

    def Alltoallw_init(self, sendbuf: Any, recvbuf: Any, info: Info = INFO_NULL) -> Prequest:
        """Persistent All to All General."""
        call = "Comm.Alltoallw_init"
        _begin(self, call, info)
        parsed = _inter(self)._alltoallw_args(call, sendbuf, recvbuf)
        return _initialize(call, "alltoallw", parsed)

    def Reduce_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce of the other group's data to the root (root=ROOT)."""
        call = "Comm.Reduce_init"
        _begin(self, call, info)
        parsed = _inter(self)._reduce_args(call, sendbuf, recvbuf, op, root)
        return _initialize(call, "reduce", parsed)

    def Allreduce_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce to All: each group receives the reduction of the other's data."""
        call = "Comm.Allreduce_init"
        _begin(self, call, info)
        parsed = _inter(self)._allreduce_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "allreduce", parsed)

    def Reduce_scatter_block_init(
        self, sendbuf: Any, recvbuf: Any, op: Op = SUM, info: Info = INFO_NULL
    ) -> Prequest:
        """Persistent Reduce-Scatter Block: the other group's reduction, a block each."""
        call = "Comm.Reduce_scatter_block_init"
        _begin(self, call, info)
        parsed = _inter(self)._reduce_scatter_block_args(call, sendbuf, recvbuf, op)
        return _initialize(call, "reduce_scatter_block", parsed)

    def Reduce_scatter_init(
        self,
        sendbuf: Any,
        recvbuf: Any,
        recvcounts: Sequence[int] | None = None,
        op: Op = SUM,
        info: Info = INFO_NULL,
    ) -> Prequest:
        """Persistent Reduce-Scatter: the other group's reduction, ``recvcounts[i]`` elements
        to process ``i`` of this group."""
        call = "Comm.Reduce_scatter_init"
        _begin(self, call, info)
        parsed = _inter(self)._reduce_scatter_args(call, sendbuf, recvbuf, recvcounts, op)
        return _initialize(call, "reduce_scatter", parsed)


def _inter(handle: object) -> InterCollectives:
    """The handle as the intercommunicator collective mixin it is combined with."""
    assert isinstance(handle, InterCollectives)
    return handle


__all__ = ["InterPersistentCollectives"]
