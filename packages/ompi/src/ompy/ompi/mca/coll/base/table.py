"""A communicator's function table: each collective operation from the best module offering it.

Built by :func:`~.select.comm_select` when the communicator is created and kept as
``comm.coll``.  Every operation of :data:`~ompy.ompi.mca.coll.interface.OPERATIONS` is an
attribute holding a plain callable with the module's signature, so the API's hot path is one
attribute read and one call::

    comm.coll.allreduce(comm, sendspec, recvspec, op)
    request = comm.coll.iallreduce(comm, sendspec, recvspec, op)

The table also carries the per-communicator state the base shares between components: the
collective call counter and the nonblocking calls in flight per tag (:mod:`.tags`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ....errors import ERR_UNSUPPORTED_OPERATION
from ....errors import Exception as MPIException
from ..interface import (
    BLOCKING,
    OPERATIONS,
    Allgather,
    AllgatherInit,
    AllgatherObject,
    Allreduce,
    AllreduceInit,
    AllreduceObject,
    Alltoall,
    AlltoallInit,
    AlltoallObject,
    Alltoallw,
    AlltoallwInit,
    Barrier,
    BarrierInit,
    Bcast,
    BcastInit,
    BcastObject,
    CollModule,
    Gather,
    GatherInit,
    GatherObject,
    Iallgather,
    Iallreduce,
    Ialltoall,
    Ialltoallw,
    Ibarrier,
    Ibcast,
    Igather,
    Ireduce,
    IreduceScatter,
    Iscatter,
    Reduce,
    ReduceInit,
    ReduceObject,
    ReduceScatter,
    ReduceScatterInit,
    ScanObject,
    Scatter,
    ScatterInit,
    ScatterObject,
)
from .persistent import PersistentTags


@attrs.define(eq=False)
class Provider:
    """Where one operation of a table comes from."""

    operation: str
    component: str
    module: CollModule
    #: True when a blocking operation is served by waiting on the module's nonblocking one.
    through_nonblocking: bool = False


class CollTable:
    """The collective operations of one communicator (attributes named after the operations)."""

    # Every operation, typed with the interface's signatures (build_table sets each one of
    # OPERATIONS as an attribute).
    barrier: Barrier
    bcast: Bcast
    gather: Gather
    gatherv: Gather
    scatter: Scatter
    scatterv: Scatter
    allgather: Allgather
    allgatherv: Allgather
    alltoall: Alltoall
    alltoallv: Alltoall
    alltoallw: Alltoallw
    reduce: Reduce
    allreduce: Allreduce
    reduce_scatter_block: Allreduce
    reduce_scatter: ReduceScatter
    scan: Allreduce
    exscan: Allreduce
    ibarrier: Ibarrier
    ibcast: Ibcast
    igather: Igather
    igatherv: Igather
    iscatter: Iscatter
    iscatterv: Iscatter
    iallgather: Iallgather
    iallgatherv: Iallgather
    ialltoall: Ialltoall
    ialltoallv: Ialltoall
    ialltoallw: Ialltoallw
    ireduce: Ireduce
    iallreduce: Iallreduce
    ireduce_scatter_block: Iallreduce
    ireduce_scatter: IreduceScatter
    iscan: Iallreduce
    iexscan: Iallreduce
    bcast_object: BcastObject
    gather_object: GatherObject
    scatter_object: ScatterObject
    allgather_object: AllgatherObject
    alltoall_object: AlltoallObject
    reduce_object: ReduceObject
    allreduce_object: AllreduceObject
    scan_object: ScanObject
    exscan_object: ScanObject
    # persistent collectives (MPI-4)
    barrier_init: BarrierInit
    bcast_init: BcastInit
    gather_init: GatherInit
    gatherv_init: GatherInit
    scatter_init: ScatterInit
    scatterv_init: ScatterInit
    allgather_init: AllgatherInit
    allgatherv_init: AllgatherInit
    alltoall_init: AlltoallInit
    alltoallv_init: AlltoallInit
    alltoallw_init: AlltoallwInit
    reduce_init: ReduceInit
    allreduce_init: AllreduceInit
    reduce_scatter_block_init: AllreduceInit
    reduce_scatter_init: ReduceScatterInit
    scan_init: AllreduceInit
    exscan_init: AllreduceInit
    neighbor_allgather_init: AllgatherInit
    neighbor_allgatherv_init: AllgatherInit
    neighbor_alltoall_init: AlltoallInit
    neighbor_alltoallv_init: AlltoallInit
    neighbor_alltoallw_init: AlltoallwInit
    # neighbor collectives (on a communicator with a topology)
    neighbor_allgather: Allgather
    neighbor_allgatherv: Allgather
    neighbor_alltoall: Alltoall
    neighbor_alltoallv: Alltoall
    neighbor_alltoallw: Alltoallw
    ineighbor_allgather: Iallgather
    ineighbor_allgatherv: Iallgather
    ineighbor_alltoall: Ialltoall
    ineighbor_alltoallv: Ialltoall
    ineighbor_alltoallw: Ialltoallw
    neighbor_allgather_object: AllgatherObject
    neighbor_alltoall_object: AlltoallObject

    def __init__(self, modules: list[tuple[str, CollModule]]) -> None:
        #: (component name, module) of every module serving some operation, best first.
        self.modules = modules
        #: Operation name -> where it comes from (absent: nobody implements it).
        self.providers: dict[str, Provider] = {}
        #: Collective calls started on this communicator (the same count on every member).
        self.sequence = 0
        #: Tag -> the nonblocking call last started on it, while it may be in flight.
        self.inflight: dict[int, Any] = {}
        #: The tags of this communicator's persistent collectives (one per init).
        self.persistent = PersistentTags()

    def provider(self, operation: str) -> str | None:
        """The name of the component serving ``operation`` here, or ``None``."""
        found = self.providers.get(operation)
        return None if found is None else found.component

    def describe(self) -> str:
        """One line per component: the operations it serves (``coll_base_verbose`` output)."""
        by_component: dict[str, list[str]] = {}
        for operation in OPERATIONS:
            found = self.providers.get(operation)
            if found is not None:
                name = operation + ("(via i" + operation + ")" if found.through_nonblocking else "")
                by_component.setdefault(found.component, []).append(name)
        lines = [f"{name}: {', '.join(ops)}" for name, ops in by_component.items()]
        missing = [op for op in OPERATIONS if op not in self.providers]
        if missing:
            lines.append(f"nobody: {', '.join(missing)}")
        return "; ".join(lines)


def build_table(
    offers: list[tuple[str, CollModule]], comm_name: str, running: str
) -> tuple[CollTable, list[tuple[str, CollModule]]]:
    """The table of a communicator from its offers (best first), and the modules it uses."""
    providers: dict[str, Provider] = {}
    for operation in OPERATIONS:
        for name, module in offers:
            if module.implements(operation):
                providers[operation] = Provider(operation, name, module)
                break
    for operation in BLOCKING:
        nonblocking = providers.get("i" + operation)
        if operation not in providers and nonblocking is not None:
            providers[operation] = Provider(
                operation, nonblocking.component, nonblocking.module, True
            )
    used = [
        (name, module)
        for name, module in offers
        if any(provider.module is module for provider in providers.values())
    ]
    table = CollTable(used)
    table.providers = providers
    for operation in OPERATIONS:
        found = providers.get(operation)
        if found is None:
            function = _unsupported(operation, comm_name, running)
        elif found.through_nonblocking:
            function = _wait_on(getattr(found.module, "i" + operation))
        else:
            function = getattr(found.module, operation)
        setattr(table, operation, function)
    return table, used


class _UnselectedTable(CollTable):
    """A table no selection filled: each operation, looked up, is one that refuses to run.

    Every communicator holds one from construction until ``create`` selects its real table (a
    communicator used only by the library itself, such as the rendezvous channel, keeps it),
    so ``comm.coll`` is always a table; making it costs no more than an empty table.
    """

    def __init__(self, comm_name: str) -> None:
        super().__init__([])
        self._comm_name = comm_name

    def __getattr__(self, operation: str) -> Callable[..., Any]:
        if operation not in OPERATIONS:
            raise AttributeError(operation)
        return _unsupported(operation, self._comm_name, "none (no selection was made)")


def unselected_table(comm_name: str) -> CollTable:
    """The table of a communicator before (or without) selection: every operation refuses."""
    return _UnselectedTable(comm_name)


def _wait_on(start: Callable[..., Any]) -> Callable[..., None]:
    """A blocking operation made of a nonblocking one: start it, progress until it completes."""

    def blocking(comm: Any, *args: Any) -> None:
        request = start(comm, *args)
        if not request.complete:
            comm.engine.wait_until(lambda: request.complete)
        if request.exception is not None:
            raise request.exception

    return blocking


def _unsupported(operation: str, comm_name: str, running: str) -> Callable[..., Any]:
    def unsupported(comm: Any, *args: Any) -> Any:
        serving = (
            "ompy-coll-inter, which implements every collective on intercommunicators"
            if comm is not None and comm.is_inter
            else "ompy-coll-basic, which implements every collective operation"
        )
        raise MPIException(
            ERR_UNSUPPORTED_OPERATION,
            f"no coll component implements {operation} on the communicator {comm_name!r} "
            f"(coll components running on it: {running}); install {serving}, or check the "
            "'coll' parameter",
        )

    return unsupported
