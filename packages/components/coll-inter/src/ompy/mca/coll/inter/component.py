"""The ``inter`` component and its module: every collective on an intercommunicator.

Like Open MPI's ``coll/inter``, it runs on intercommunicators only (and every other coll
component declines them), at a priority above the intracommunicator components.  Each buffer
operation is a schedule (:mod:`.schedules`) run blocking in the caller or started on the
progress engine for the nonblocking form; the persistent forms (:mod:`.persistent`) record the
same shapes as a plan at init that every start replays; the object operations
(:mod:`.objects`) move Python objects point to point.  ``scan`` and ``exscan`` are not defined
on intercommunicators, so the module does not offer them.
"""

from __future__ import annotations

from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import blocking, nonblocking, planned
from ompy.opal.mca import Offer

from . import __version__, objects, persistent, schedules


class InterCollModule(CollModule):
    """Every operation MPI defines on intercommunicators; no per-communicator state."""

    barrier = blocking(schedules.barrier)
    ibarrier = nonblocking(schedules.barrier)
    bcast = blocking(schedules.bcast)
    ibcast = nonblocking(schedules.bcast)
    gather = gatherv = blocking(schedules.gather)
    igather = igatherv = nonblocking(schedules.gather)
    scatter = scatterv = blocking(schedules.scatter)
    iscatter = iscatterv = nonblocking(schedules.scatter)
    allgather = allgatherv = blocking(schedules.allgather)
    iallgather = iallgatherv = nonblocking(schedules.allgather)
    alltoall = alltoallv = blocking(schedules.alltoall)
    ialltoall = ialltoallv = nonblocking(schedules.alltoall)
    alltoallw = blocking(schedules.alltoallw)
    ialltoallw = nonblocking(schedules.alltoallw)
    reduce = blocking(schedules.reduce)
    ireduce = nonblocking(schedules.reduce)
    allreduce = blocking(schedules.allreduce)
    iallreduce = nonblocking(schedules.allreduce)
    reduce_scatter_block = blocking(schedules.reduce_scatter_block)
    ireduce_scatter_block = nonblocking(schedules.reduce_scatter_block)
    reduce_scatter = blocking(schedules.reduce_scatter)
    ireduce_scatter = nonblocking(schedules.reduce_scatter)
    barrier_init = planned(persistent.barrier)
    bcast_init = planned(persistent.bcast)
    gather_init = gatherv_init = planned(persistent.gather)
    scatter_init = scatterv_init = planned(persistent.scatter)
    allgather_init = allgatherv_init = planned(persistent.allgather)
    alltoall_init = alltoallv_init = planned(persistent.alltoall)
    alltoallw_init = planned(persistent.alltoallw)
    reduce_init = planned(persistent.reduce)
    allreduce_init = planned(persistent.allreduce)
    reduce_scatter_block_init = planned(persistent.reduce_scatter_block)
    reduce_scatter_init = planned(persistent.reduce_scatter)
    bcast_object = staticmethod(objects.bcast)
    gather_object = staticmethod(objects.gather)
    scatter_object = staticmethod(objects.scatter)
    allgather_object = staticmethod(objects.allgather)
    alltoall_object = staticmethod(objects.alltoall)
    reduce_object = staticmethod(objects.reduce)
    allreduce_object = staticmethod(objects.allreduce)


class InterCollComponent(CollComponent):
    """Collectives with MPI's intercommunicator semantics, on point-to-point."""

    name = "inter"
    version = __version__
    description = "every collective on intercommunicators (between the two groups)"
    default_priority = 40

    def query(self, context: Any) -> Offer[CollModule] | None:
        """Run on intercommunicators only."""
        if not context.is_inter:
            return None
        return Offer(self.priority, InterCollModule())
