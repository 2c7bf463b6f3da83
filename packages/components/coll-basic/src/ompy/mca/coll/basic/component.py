"""The ``basic`` component and its module: every collective, blocking, nonblocking, persistent.

Like Open MPI's ``coll/basic``, it is the fallback under every other coll component: it runs on
every intra-communicator at a low priority, so a faster component wins whatever it implements
and ``basic`` serves the rest.  Each algorithm is written once, as a schedule
(:mod:`.rooted`, :mod:`.everyone`, :mod:`.neighbor`); the blocking method runs it in the
caller and the nonblocking one starts it on the progress engine; the persistent forms
(:mod:`.persistent`) record a plan at init that every start replays.  The object operations
(:mod:`.objects`) move Python objects point to point.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ompy.ompi.mca.coll import CollComponent, CollModule
from ompy.ompi.mca.coll.base import (
    Neighborhood,
    blocking,
    neighborhood,
    nonblocking,
    planned,
    run_schedule,
    start_schedule,
)
from ompy.opal.mca import Offer

from . import __version__, everyone, neighbor, objects, persistent, rooted


def _on_edges(algorithm: Callable[..., Any], *, start: bool = False) -> Callable[..., Any]:
    """A neighbor collective: ``algorithm(comm, tag, edges, ...)`` on the module's
    neighbourhood of ``comm``, run in the caller or (``start``) started nonblocking."""
    name = algorithm.__name__
    drive = start_schedule if start else run_schedule

    def operation(self: BasicCollModule, comm: Any, *args: Any) -> Any:
        return drive(comm, algorithm, self._neighbors(comm, name), *args)

    operation.__name__ = ("i" if start else "") + name
    operation.__doc__ = algorithm.__doc__
    return operation


class BasicCollModule(CollModule):
    """Every operation of the coll interface; its only per-communicator state is the
    neighbourhood of a communicator with a topology."""

    barrier = blocking(rooted.barrier)
    ibarrier = nonblocking(rooted.barrier)
    bcast = blocking(rooted.bcast)
    ibcast = nonblocking(rooted.bcast)
    gather = gatherv = blocking(rooted.gather)
    igather = igatherv = nonblocking(rooted.gather)
    scatter = scatterv = blocking(rooted.scatter)
    iscatter = iscatterv = nonblocking(rooted.scatter)
    reduce = blocking(rooted.reduce)
    ireduce = nonblocking(rooted.reduce)
    allgather = allgatherv = blocking(everyone.allgather)
    iallgather = iallgatherv = nonblocking(everyone.allgather)
    alltoall = alltoallv = blocking(everyone.alltoall)
    ialltoall = ialltoallv = nonblocking(everyone.alltoall)
    alltoallw = blocking(everyone.alltoallw)
    ialltoallw = nonblocking(everyone.alltoallw)
    allreduce = blocking(everyone.allreduce)
    iallreduce = nonblocking(everyone.allreduce)
    reduce_scatter_block = blocking(everyone.reduce_scatter_block)
    ireduce_scatter_block = nonblocking(everyone.reduce_scatter_block)
    reduce_scatter = blocking(everyone.reduce_scatter)
    ireduce_scatter = nonblocking(everyone.reduce_scatter)
    scan = blocking(everyone.scan)
    iscan = nonblocking(everyone.scan)
    exscan = blocking(everyone.exscan)
    iexscan = nonblocking(everyone.exscan)
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
    # neighbor collectives (communicators with a topology): one message per edge, on the
    # communicator's neighbourhood, computed at the first call and kept (see _neighbors)
    neighbor_allgather = neighbor_allgatherv = _on_edges(neighbor.neighbor_allgather)
    ineighbor_allgather = ineighbor_allgatherv = _on_edges(neighbor.neighbor_allgather, start=True)
    neighbor_alltoall = neighbor_alltoallv = _on_edges(neighbor.neighbor_alltoall)
    ineighbor_alltoall = ineighbor_alltoallv = _on_edges(neighbor.neighbor_alltoall, start=True)
    neighbor_alltoallw = _on_edges(neighbor.neighbor_alltoallw)
    ineighbor_alltoallw = _on_edges(neighbor.neighbor_alltoallw, start=True)

    def neighbor_allgather_object(self, comm: Any, obj: Any) -> list[Any]:
        """One object per in-edge (the object form of ``neighbor_allgather``)."""
        edges = self._neighbors(comm, "neighbor_allgather")
        return neighbor.neighbor_allgather_object(comm, edges, obj)

    def neighbor_alltoall_object(self, comm: Any, items: Any) -> list[Any]:
        """Item ``i`` along out-edge ``i``; one object per in-edge."""
        edges = self._neighbors(comm, "neighbor_alltoall")
        return neighbor.neighbor_alltoall_object(comm, edges, items)

    _edges: Neighborhood | None = None

    def _neighbors(self, comm: Any, operation: str) -> Neighborhood:
        """The communicator's neighbourhood, computed once (the module is this communicator's;
        a refusal, such as an asymmetric graph, is raised again at every call)."""
        edges = self._edges
        if edges is None:
            edges = self._edges = neighborhood(comm, operation)
        return edges

    # Persistent collectives (MPI-4): a plan recorded once at init, replayed by every start
    barrier_init = planned(persistent.barrier)
    bcast_init = planned(persistent.bcast)
    gather_init = gatherv_init = planned(persistent.gather)
    scatter_init = scatterv_init = planned(persistent.scatter)
    reduce_init = planned(persistent.reduce)
    allgather_init = allgatherv_init = planned(persistent.allgather)
    alltoall_init = alltoallv_init = planned(persistent.alltoall)
    alltoallw_init = planned(persistent.alltoallw)
    allreduce_init = planned(persistent.allreduce)
    reduce_scatter_block_init = planned(persistent.reduce_scatter_block)
    reduce_scatter_init = planned(persistent.reduce_scatter)
    scan_init = planned(persistent.scan)
    exscan_init = planned(persistent.exscan)
    neighbor_allgather_init = neighbor_allgatherv_init = planned(persistent.neighbor_allgather)
    neighbor_alltoall_init = neighbor_alltoallv_init = planned(persistent.neighbor_alltoall)
    neighbor_alltoallw_init = planned(persistent.neighbor_alltoallw)


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
