"""Persistent collectives on an intercommunicator: ``Intercomm.Barrier_init`` ..
``Reduce_scatter_init`` (mpi4py has every ``X_init`` on ``Comm``; ``Scan_init`` and
``Exscan_init`` are ``Intracomm``'s only, as MPI defines no scan between two groups).

Each ``X_init`` checks its arguments exactly as the intercommunicator's ``X`` does (the
argument readers of :class:`~.inter_collective.InterCollectives`: ``ROOT``/``PROC_NULL``
roots, blocks per *remote* rank, no ``IN_PLACE``), plus ``info``, and hands the parsed buffers
to the coll table's ``x_init`` (``ompy-coll-inter`` records a plan once, see
:mod:`ompy.mca.coll.inter.persistent`).  The request it returns behaves as on an
intracommunicator (:mod:`.persistent_collectives`: ``Start``/``Startall`` many times, ``Free``
only when inactive, its own tag taken at init so starts may come in any order).
"""

from __future__ import annotations

from .inter_collective import InterCollectives
from .persistent_collectives import _no_arguments, persistent

_Inter = InterCollectives


class InterPersistentCollectives:
    """The persistent half of :class:`~.intercomm.Intercomm` (with :class:`.InterCollectives`,
    whose argument readers it shares): one row a method, its name and its argument reader."""

    __slots__ = ()

    Barrier_init = persistent(
        _no_arguments, "Comm.Barrier_init", "Persistent Barrier (every process of both groups)."
    )
    Bcast_init = persistent(
        _Inter._bcast_args,
        "Comm.Bcast_init",
        "Persistent Broadcast from the root (root=ROOT) to every process of the other group.",
    )
    Gather_init = persistent(
        _Inter._gather_args,
        "Comm.Gather_init",
        "Persistent Gather from every process of the other group to the root.",
    )
    Gatherv_init = persistent(_Inter._gather_args, "Comm.Gatherv_init", "Persistent Gather Vector.")
    Scatter_init = persistent(
        _Inter._scatter_args,
        "Comm.Scatter_init",
        "Persistent Scatter from the root to every process of the other group.",
    )
    Scatterv_init = persistent(
        _Inter._scatter_args, "Comm.Scatterv_init", "Persistent Scatter Vector."
    )
    Allgather_init = persistent(
        _Inter._allgather_args,
        "Comm.Allgather_init",
        "Persistent Gather to All: one block from each process of the other group.",
    )
    Allgatherv_init = persistent(
        _Inter._allgather_args, "Comm.Allgatherv_init", "Persistent Gather to All Vector."
    )
    Alltoall_init = persistent(
        _Inter._alltoall_args, "Comm.Alltoall_init", "Persistent All to All across the groups."
    )
    Alltoallv_init = persistent(
        _Inter._alltoall_args, "Comm.Alltoallv_init", "Persistent All to All Vector."
    )
    Alltoallw_init = persistent(
        _Inter._alltoallw_args, "Comm.Alltoallw_init", "Persistent All to All General."
    )
    Reduce_init = persistent(
        _Inter._reduce_args,
        "Comm.Reduce_init",
        "Persistent Reduce of the other group's data to the root (root=ROOT).",
    )
    Allreduce_init = persistent(
        _Inter._allreduce_args,
        "Comm.Allreduce_init",
        "Persistent Reduce to All: each group receives the reduction of the other's data.",
    )
    Reduce_scatter_block_init = persistent(
        _Inter._reduce_scatter_block_args,
        "Comm.Reduce_scatter_block_init",
        "Persistent Reduce-Scatter Block: the other group's reduction, a block each.",
    )
    Reduce_scatter_init = persistent(
        _Inter._reduce_scatter_args,
        "Comm.Reduce_scatter_init",
        "Persistent Reduce-Scatter: the other group's reduction, ``recvcounts[i]`` elements to "
        "process ``i`` of this group.",
    )


__all__ = ["InterPersistentCollectives"]
