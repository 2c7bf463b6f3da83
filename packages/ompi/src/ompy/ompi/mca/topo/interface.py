"""The topo framework's contracts: the topology a communicator carries, and what a component
may decide about it (the placement of processes when a program lets MPI reorder them).

Open MPI attaches a topology module to every Cartesian, graph and distributed-graph
communicator; its base does the bookkeeping (coordinates, neighbours, shifts) and its
components may replace the mapping functions (``cart_map``, ``graph_map``, and the reorder
step of distributed graphs) with ones that know the machine.  ompy splits it the same way:

- :class:`Topology` (and its three kinds) is data: what the communicator's neighbourhood is
  for the calling process.  Every caller reads it from ``Communicator.topo`` (``None`` for a
  communicator without a topology); the neighbor collectives use ``sources`` and
  ``destinations`` only.
- :class:`TopoModule` is what a component contributes: a placement of the parent's processes
  on the new topology.  It is asked only when the program passes ``reorder=True`` (and by
  ``Cart_map``/``Graph_map``); a placement is a pure function of the request, so every process
  computes the same one without talking to the others.

The neighbour order (the contract the neighbor collectives rely on): Cartesian, for each
dimension the neighbour at displacement -1 then the one at +1 (``PROC_NULL`` where a
non-periodic boundary has none), the same list both ways; graph, the node's neighbours in the
order the graph lists them, the same list both ways; distributed graph, as the program gave them
(``Create_dist_graph_adjacent``) or in the order of the ranks that named the edges, then the
order they named them in (``Create_dist_graph``).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import ClassVar, Final

import attrs

from ompy.opal.mca import Component, Offer

#: The version of this interface; components declare the version they were written against.
INTERFACE_VERSION = (1, 0)

# The kinds of topology (``Comm.Get_topology``), with Open MPI 5's values.
#: Cartesian topology.
CART: Final = 1
#: General graph topology.
GRAPH: Final = 2
#: Distributed graph topology.
DIST_GRAPH: Final = 3

#: The name of each kind, for messages.
KIND_NAMES: Final = {CART: "Cartesian", GRAPH: "graph", DIST_GRAPH: "distributed graph"}


@attrs.frozen(kw_only=True)
class Topology:
    """The topology of one communicator, as the calling process sees it.

    ``sources`` are the ranks the neighbor collectives receive from (block ``j`` from
    ``sources[j]``), ``destinations`` the ranks they send to (block ``i`` to
    ``destinations[i]``); ``PROC_NULL`` entries move nothing.  ``source_weights`` and
    ``destination_weights`` are ``None`` for an unweighted topology.
    """

    kind: int
    sources: tuple[int, ...]
    destinations: tuple[int, ...]
    source_weights: tuple[int, ...] | None = None
    destination_weights: tuple[int, ...] | None = None

    @property
    def weighted(self) -> bool:
        """Whether the topology carries edge weights."""
        return self.source_weights is not None


@attrs.frozen(kw_only=True)
class CartTopology(Topology):
    """A Cartesian grid: its extent and periodicity per dimension, and where this process is."""

    dims: tuple[int, ...]
    periods: tuple[bool, ...]
    coords: tuple[int, ...]


@attrs.frozen(kw_only=True)
class GraphTopology(Topology):
    """A general graph, known whole to every member (MPI-1's ``index``/``edges`` form).

    ``index[i]`` is the number of edges of nodes ``0..i``; node ``i``'s neighbours are
    ``edges[index[i-1]:index[i]]``.
    """

    index: tuple[int, ...]
    edges: tuple[int, ...]


@attrs.frozen(kw_only=True)
class DistGraphTopology(Topology):
    """A distributed graph: each process knows only its own in- and out-edges."""


# -- what a component is asked ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class MapRequest:
    """What every placement request says about the processes to place.

    ``size`` is the size of the parent communicator, ``node_ids[r]`` the node its rank ``r``
    runs on (processes of one node share memory), ``hints`` the info hints of the call.
    """

    size: int
    node_ids: tuple[int, ...]
    hints: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class CartMapRequest(MapRequest):
    """Place the parent's processes on a Cartesian grid (``prod(dims) <= size``)."""

    dims: tuple[int, ...]
    periods: tuple[bool, ...]


@attrs.frozen(kw_only=True)
class GraphMapRequest(MapRequest):
    """Place the parent's processes on the nodes of a graph (``len(index) <= size``)."""

    index: tuple[int, ...]
    edges: tuple[int, ...]


@attrs.frozen(kw_only=True)
class DistGraphMapRequest(MapRequest):
    """Place the parent's processes given the whole distributed graph.

    ``edges`` holds every edge ``(source, destination, weight)`` in parent ranks (``weight``
    is 1 in an unweighted graph); every process gets the same tuple.
    """

    edges: tuple[tuple[int, int, int], ...]
    weighted: bool


class TopoModule(abc.ABC):
    """A component's placement functions.

    Each answers a tuple of ``size`` entries: the new rank of each rank of the parent, or
    ``UNDEFINED`` for a process left out (Cartesian and graph topologies smaller than the
    parent).  The new ranks must be exactly ``0..n-1`` for the ``n`` processes of the topology;
    the framework checks this and names the component when it is not.  A placement must be a
    pure function of the request: every process of the parent asks its own module and they
    must all get the same answer.
    """

    @abc.abstractmethod
    def cart_map(self, request: CartMapRequest) -> Sequence[int]:
        """New ranks for a Cartesian grid (``Create_cart(reorder=True)``, ``Cart_map``)."""

    @abc.abstractmethod
    def graph_map(self, request: GraphMapRequest) -> Sequence[int]:
        """New ranks for a graph (``Create_graph(reorder=True)``, ``Graph_map``)."""

    @abc.abstractmethod
    def dist_graph_map(self, request: DistGraphMapRequest) -> Sequence[int]:
        """New ranks for a distributed graph (``Create_dist_graph*(reorder=True)``)."""


@attrs.frozen
class TopoQuery:
    """What ``query`` is asked about: a topology of ``kind`` over a parent of ``size``."""

    kind: int
    size: int


class TopoComponent(Component[TopoQuery, TopoModule]):
    """Base class of topo components: ``query`` offers a :class:`TopoModule` for a topology.

    The framework keeps the best offer for each topology being created (one of many, as Open
    MPI selects a topo component per communicator).
    """

    framework: ClassVar[str] = "topo"
    interface_version: ClassVar[tuple[int, int]] = INTERFACE_VERSION

    def query(self, context: TopoQuery) -> Offer[TopoModule] | None:
        """Offer a module for ``context`` (the default stays out)."""
        return None
