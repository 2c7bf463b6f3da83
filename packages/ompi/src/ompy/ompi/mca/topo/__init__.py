"""The topo framework: Cartesian, graph and distributed-graph topologies of communicators.

Components are found through the entry-point group ``ompy.mca.topo`` (``ompy-topo-basic`` is
the baseline: it keeps the processes in their order) and selected with the ``topo`` parameter;
for each topology created with ``reorder=True`` the best offer places the processes.  The
topology itself (:class:`Topology`) is data every communicator carries as ``topo``; the
bookkeeping on it (coordinates, shifts, neighbours, ``Compute_dims``) lives in :mod:`.base`.
"""

from __future__ import annotations

from ompy.opal.mca import Cardinality, Framework

from .interface import (
    CART,
    DIST_GRAPH,
    GRAPH,
    INTERFACE_VERSION,
    KIND_NAMES,
    CartMapRequest,
    CartTopology,
    DistGraphMapRequest,
    DistGraphTopology,
    GraphMapRequest,
    GraphTopology,
    MapRequest,
    TopoComponent,
    Topology,
    TopoModule,
    TopoQuery,
)

framework = Framework.of(
    TopoComponent,
    "ompi",
    Cardinality.ONE,
    "process topologies: placement of processes on Cartesian grids and graphs",
)

__all__ = [
    "CART",
    "DIST_GRAPH",
    "GRAPH",
    "INTERFACE_VERSION",
    "KIND_NAMES",
    "CartMapRequest",
    "CartTopology",
    "DistGraphMapRequest",
    "DistGraphTopology",
    "GraphMapRequest",
    "GraphTopology",
    "MapRequest",
    "TopoComponent",
    "TopoModule",
    "TopoQuery",
    "Topology",
    "framework",
]
