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

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import plan_collective, run_schedule, start_schedule
from ompy.opal.mca import Offer

from . import __version__, objects, persistent, schedules


def _blocking(algorithm: Callable[..., Any]) -> Callable[..., None]:
    def operation(self: CollModule, comm: Any, *args: Any) -> None:
        run_schedule(comm, algorithm, *args)

    operation.__name__ = algorithm.__name__
    operation.__doc__ = algorithm.__doc__
    return operation


def _nonblocking(algorithm: Callable[..., Any]) -> Callable[..., Any]:
    def operation(self: CollModule, comm: Any, *args: Any) -> Any:
        return start_schedule(comm, algorithm, *args)

    operation.__name__ = "i" + algorithm.__name__
    operation.__doc__ = algorithm.__doc__
    return operation


def _persistent(algorithm: Callable[..., None]) -> Callable[..., Any]:
    def operation(self: CollModule, comm: Any, *args: Any) -> Any:
        return plan_collective(comm, algorithm, *args)

    operation.__name__ = algorithm.__name__ + "_init"
    operation.__doc__ = algorithm.__doc__
    return operation


class InterCollModule(CollModule):
    """Every operation MPI defines on intercommunicators; no per-communicator state."""

    barrier = _blocking(schedules.barrier)
    ibarrier = _nonblocking(schedules.barrier)
    bcast = _blocking(schedules.bcast)
    ibcast = _nonblocking(schedules.bcast)
    gather = gatherv = _blocking(schedules.gather)
    igather = igatherv = _nonblocking(schedules.gather)
    scatter = scatterv = _blocking(schedules.scatter)
    iscatter = iscatterv = _nonblocking(schedules.scatter)
    allgather = allgatherv = _blocking(schedules.allgather)
    iallgather = iallgatherv = _nonblocking(schedules.allgather)
    alltoall = alltoallv = _blocking(schedules.alltoall)
    ialltoall = ialltoallv = _nonblocking(schedules.alltoall)
    alltoallw = _blocking(schedules.alltoallw)
    ialltoallw = _nonblocking(schedules.alltoallw)
    reduce = _blocking(schedules.reduce)
    ireduce = _nonblocking(schedules.reduce)
    allreduce = _blocking(schedules.allreduce)
    iallreduce = _nonblocking(schedules.allreduce)
    reduce_scatter_block = _blocking(schedules.reduce_scatter_block)
    ireduce_scatter_block = _nonblocking(schedules.reduce_scatter_block)
    reduce_scatter = _blocking(schedules.reduce_scatter)
    ireduce_scatter = _nonblocking(schedules.reduce_scatter)
    barrier_init = _persistent(persistent.barrier)
    bcast_init = _persistent(persistent.bcast)
    gather_init = gatherv_init = _persistent(persistent.gather)
    scatter_init = scatterv_init = _persistent(persistent.scatter)
    allgather_init = allgatherv_init = _persistent(persistent.allgather)
    alltoall_init = alltoallv_init = _persistent(persistent.alltoall)
    alltoallw_init = _persistent(persistent.alltoallw)
    reduce_init = _persistent(persistent.reduce)
    allreduce_init = _persistent(persistent.allreduce)
    reduce_scatter_block_init = _persistent(persistent.reduce_scatter_block)
    reduce_scatter_init = _persistent(persistent.reduce_scatter)
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
