"""The ``basic`` component and its module: the placement that keeps the parent's order.

Open MPI's topo/basic does the same: it knows nothing about the machine, so the best it can
promise is not to make things worse.  A component that knows better (which processes share a
node, the network's shape) outranks it by priority; see docs/topologies.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from ompy.ompi.mca.topo import (
    CartMapRequest,
    DistGraphMapRequest,
    GraphMapRequest,
    TopoComponent,
    TopoModule,
    TopoQuery,
)
from ompy.ompi.mca.topo.base import cartesian, identity
from ompy.opal.mca import Offer

from . import __version__


class BasicTopoModule(TopoModule):
    """Rank ``r`` of the parent becomes rank ``r`` of the topology (if the topology has it)."""

    def cart_map(self, request: CartMapRequest) -> Sequence[int]:
        return identity(request.size, cartesian.cells(request.dims))

    def graph_map(self, request: GraphMapRequest) -> Sequence[int]:
        return identity(request.size, len(request.index))

    def dist_graph_map(self, request: DistGraphMapRequest) -> Sequence[int]:
        return identity(request.size, request.size)


class BasicTopoComponent(TopoComponent):
    """Placement that keeps the processes in order, for every kind of topology."""

    name = "basic"
    version = __version__
    description = "processes keep their order in every topology"
    default_priority = 10

    def query(self, context: TopoQuery) -> Offer[TopoModule] | None:
        return Offer(self.priority, BasicTopoModule())
