"""The ``basic`` component and its module: every collective, blocking and nonblocking.

Like Open MPI's ``coll/basic``, it is the fallback under every other coll component: it runs on
every intra-communicator at a low priority, so a faster component wins whatever it implements
and ``basic`` serves the rest.  Each algorithm is written once, as a schedule
(:mod:`.rooted`, :mod:`.everyone`); the blocking method runs it in the caller and the
nonblocking one starts it on the progress engine.  The object operations (:mod:`.objects`)
move Python objects point to point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import run_schedule, start_schedule
from ompy.opal.mca import Offer

from . import __version__, everyone, objects, rooted


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


class BasicCollModule(CollModule):
    """Every operation of the coll interface; no per-communicator state."""

    barrier = _blocking(rooted.barrier)
    ibarrier = _nonblocking(rooted.barrier)
    bcast = _blocking(rooted.bcast)
    ibcast = _nonblocking(rooted.bcast)
    gather = gatherv = _blocking(rooted.gather)
    igather = igatherv = _nonblocking(rooted.gather)
    scatter = scatterv = _blocking(rooted.scatter)
    iscatter = iscatterv = _nonblocking(rooted.scatter)
    reduce = _blocking(rooted.reduce)
    ireduce = _nonblocking(rooted.reduce)
    allgather = allgatherv = _blocking(everyone.allgather)
    iallgather = iallgatherv = _nonblocking(everyone.allgather)
    alltoall = alltoallv = _blocking(everyone.alltoall)
    ialltoall = ialltoallv = _nonblocking(everyone.alltoall)
    alltoallw = _blocking(everyone.alltoallw)
    ialltoallw = _nonblocking(everyone.alltoallw)
    allreduce = _blocking(everyone.allreduce)
    iallreduce = _nonblocking(everyone.allreduce)
    reduce_scatter_block = _blocking(everyone.reduce_scatter_block)
    ireduce_scatter_block = _nonblocking(everyone.reduce_scatter_block)
    reduce_scatter = _blocking(everyone.reduce_scatter)
    ireduce_scatter = _nonblocking(everyone.reduce_scatter)
    scan = _blocking(everyone.scan)
    iscan = _nonblocking(everyone.scan)
    exscan = _blocking(everyone.exscan)
    iexscan = _nonblocking(everyone.exscan)
    # Python objects (the lowercase collectives), point to point through the codec; the
    # functions themselves (no per-communicator state), so the table calls them directly
    bcast_object = staticmethod(objects.bcast)
    gather_object = staticmethod(objects.gather)
    scatter_object = staticmethod(objects.scatter)
    allgather_object = staticmethod(objects.allgather)
    alltoall_object = staticmethod(objects.alltoall)
    reduce_object = staticmethod(objects.reduce)
    allreduce_object = staticmethod(objects.allreduce)
    scan_object = staticmethod(objects.scan)
    exscan_object = staticmethod(objects.exscan)


class BasicCollComponent(CollComponent):
    """Linear and binomial reference algorithms for every collective, on point-to-point."""

    name = "basic"
    version = __version__
    description = "reference algorithms for every collective (linear and binomial), the fallback"
    default_priority = 10

    def query(self, context: Any) -> Offer[CollModule] | None:
        """Run on every intra-communicator (intercommunicators are coll inter's)."""
        if context.is_inter:
            return None
        return Offer(self.priority, BasicCollModule())
