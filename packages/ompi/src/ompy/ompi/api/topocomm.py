"""``MPI.Topocomm`` and its three kinds: ``Cartcomm``, ``Graphcomm``, ``Distgraphcomm``.

A handle of these classes refers to a communicator whose ``topo`` is of its kind; making one
from a communicator without it (``MPI.Cartcomm(comm)``) is a ``TypeError``, as in mpi4py.
Every query reads the topology the communicator carries (:mod:`ompy.ompi.mca.topo`): nothing
here communicates except ``Cartcomm.Sub``, which creates a communicator.  ``Dup`` keeps the
topology and the class; ``Split``, ``Create`` and the other constructors give plain
intracommunicators, as in MPI.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Final, Self

from ..accessors import GetProperty
from ..errors import ERR_RANK, ERR_TOPOLOGY
from ..errors import Exception as MPIException
from ..mca.topo import (
    CART,
    DIST_GRAPH,
    GRAPH,
    CartTopology,
    DistGraphTopology,
    GraphTopology,
    Topology,
)
from ..mca.topo.base import cartesian as cart
from ..mca.topo.base import graph
from .checks import as_int
from .comm import Comm, Intracomm
from .communicator import Communicator
from .neighbor import NeighborCollectives
from .persistent_collectives import PersistentNeighborCollectives
from .topo_args import sized_int_list


class Topocomm(Intracomm, NeighborCollectives, PersistentNeighborCollectives):
    """Topology intracommunicator."""

    __slots__ = ()

    #: The kind of topology a handle of this class refers to (None: any kind).
    _kind: ClassVar[int | None] = None
    #: What ``MPI.<class>(comm)`` expects, for its TypeError.
    _expecting: ClassVar[str] = "a topology communicator"

    def __new__(cls, comm: Comm | None = None) -> Self:
        handle = super().__new__(cls, comm)
        c = handle._c
        if c is not None and (c.topo is None or cls._kind not in (None, c.topo.kind)):
            raise TypeError(f"expecting {cls._expecting}")
        return handle

    def _new(
        self,
        parent: Communicator,
        world_ranks: tuple[int, ...] | None,
        how: str,
        hints: dict[str, str] | None = None,
        topo: Topology | None = None,
    ) -> Comm:
        made = super()._new(parent, world_ranks, how, hints, topo)
        if topo is None:  # Split, Create, ...: a communicator without the topology
            return Intracomm._of(made._c)
        return made

    def _topology(self, call: str) -> Topology:
        topo = self._live(call).topo
        assert topo is not None, "a Topocomm handle refers to a communicator with a topology"
        return topo

    # -- neighbours (the order of the neighbor collectives) -------------------------------------

    def _degrees(self) -> tuple[int, int]:
        topo = self._topology("Topocomm.degrees")
        return len(topo.sources), len(topo.destinations)

    def _indegree(self) -> int:
        return len(self._topology("Topocomm.indegree").sources)

    def _outdegree(self) -> int:
        return len(self._topology("Topocomm.outdegree").destinations)

    def _inoutedges(self) -> tuple[list[int], list[int]]:
        topo = self._topology("Topocomm.inoutedges")
        return list(topo.sources), list(topo.destinations)

    def _inedges(self) -> list[int]:
        return list(self._topology("Topocomm.inedges").sources)

    def _outedges(self) -> list[int]:
        return list(self._topology("Topocomm.outedges").destinations)

    degrees = GetProperty(_degrees, "Number of incoming and outgoing neighbors.")
    indegree = GetProperty(_indegree, "Number of incoming neighbors.")
    outdegree = GetProperty(_outdegree, "Number of outgoing neighbors.")
    inoutedges = GetProperty(_inoutedges, "Incoming and outgoing neighbors.")
    inedges = GetProperty(_inedges, "Incoming neighbors.")
    outedges = GetProperty(_outedges, "Outgoing neighbors.")


class Cartcomm(Topocomm):
    """Cartesian topology intracommunicator."""

    __slots__ = ()

    _kind = CART
    _expecting = "a Cartesian communicator"

    def _grid(self, call: str) -> CartTopology:
        topo = self._topology(call)
        assert isinstance(topo, CartTopology)
        return topo

    def Get_dim(self) -> int:
        """Return number of dimensions."""
        return len(self._grid("Cartcomm.Get_dim").dims)

    dim = GetProperty(Get_dim, "Number of dimensions.")
    ndim = GetProperty(Get_dim, "Number of dimensions.")

    def Get_topo(self) -> tuple[list[int], list[int], list[int]]:
        """Return information on the cartesian topology."""
        topo = self._grid("Cartcomm.Get_topo")
        return list(topo.dims), [int(p) for p in topo.periods], list(topo.coords)

    def _dims(self) -> list[int]:
        return list(self._grid("Cartcomm.dims").dims)

    def _periods(self) -> list[int]:
        return [int(p) for p in self._grid("Cartcomm.periods").periods]

    def _coords(self) -> list[int]:
        return list(self._grid("Cartcomm.coords").coords)

    topo = GetProperty(Get_topo, "Topology information.")
    dims = GetProperty(_dims, "Dimensions.")
    periods = GetProperty(_periods, "Periodicity.")
    coords = GetProperty(_coords, "Coordinates.")

    def Get_cart_rank(self, coords: Sequence[int]) -> int:
        """Translate logical coordinates to ranks."""
        call = "Cartcomm.Get_cart_rank"
        topo = self._grid(call)
        return cart.rank_of(topo, sized_int_list(coords, len(topo.dims), f"{call}: coords"), call)

    def Get_coords(self, rank: int) -> list[int]:
        """Translate ranks to logical coordinates."""
        call = "Cartcomm.Get_coords"
        topo = self._grid(call)
        return list(cart.coords_checked(topo, as_int(rank, f"{call}: rank"), call))

    def Shift(self, direction: int, disp: int) -> tuple[int, int]:
        """Return a process ranks for data shifting with `Sendrecv`."""
        call = "Cartcomm.Shift"
        topo = self._grid(call)
        direction = as_int(direction, f"{call}: direction")
        return cart.shift(topo, direction, as_int(disp, f"{call}: disp"), call)

    def Sub(self, remain_dims: Sequence[bool]) -> Cartcomm:
        """Return a lower-dimensional Cartesian topology."""
        call = "Cartcomm.Sub"
        c = self._live(call)
        topo = self._grid(call)
        remain = tuple(
            bool(keep)
            for keep in sized_int_list(remain_dims, len(topo.dims), f"{call}: remain_dims")
        )
        members, sub = cart.sub_grid(topo, remain)
        made = self._new(c, tuple(c.world_ranks[r] for r in members), "SUB", topo=sub)
        return Cartcomm._of(made._c)


class Graphcomm(Topocomm):
    """General graph topology intracommunicator."""

    __slots__ = ()

    _kind = GRAPH
    _expecting = "a general graph communicator"

    def _graph(self, call: str) -> GraphTopology:
        topo = self._topology(call)
        assert isinstance(topo, GraphTopology)
        return topo

    def Get_dims(self) -> tuple[int, int]:
        """Return the number of nodes and edges."""
        topo = self._graph("Graphcomm.Get_dims")
        return len(topo.index), len(topo.edges)

    def _nnodes(self) -> int:
        return len(self._graph("Graphcomm.nnodes").index)

    def _nedges(self) -> int:
        return len(self._graph("Graphcomm.nedges").edges)

    dims = GetProperty(Get_dims, "Number of nodes and edges.")
    nnodes = GetProperty(_nnodes, "Number of nodes.")
    nedges = GetProperty(_nedges, "Number of edges.")

    def Get_topo(self) -> tuple[list[int], list[int]]:
        """Return index and edges."""
        topo = self._graph("Graphcomm.Get_topo")
        return list(topo.index), list(topo.edges)

    def _index(self) -> list[int]:
        return list(self._graph("Graphcomm.index").index)

    def _edges(self) -> list[int]:
        return list(self._graph("Graphcomm.edges").edges)

    topo = GetProperty(Get_topo, "Topology information.")
    index = GetProperty(_index, "Index.")
    edges = GetProperty(_edges, "Edges.")

    def _neighbours_of(self, rank: Any, call: str) -> tuple[int, ...]:
        topo = self._graph(call)
        rank = as_int(rank, f"{call}: rank")
        nnodes = len(topo.index)
        if not 0 <= rank < nnodes:
            raise MPIException(
                ERR_RANK, f"{call}: rank {rank} is not a node of the graph (0..{nnodes - 1})"
            )
        return graph.neighbours(topo.index, topo.edges, rank)

    def Get_neighbors_count(self, rank: int) -> int:
        """Return number of neighbors of a process."""
        return len(self._neighbours_of(rank, "Graphcomm.Get_neighbors_count"))

    def Get_neighbors(self, rank: int) -> list[int]:
        """Return list of neighbors of a process."""
        return list(self._neighbours_of(rank, "Graphcomm.Get_neighbors"))

    def _nneighbors(self) -> int:
        return len(self._graph("Graphcomm.nneighbors").sources)

    def _neighbors(self) -> list[int]:
        return list(self._graph("Graphcomm.neighbors").sources)

    nneighbors = GetProperty(_nneighbors, "Number of neighbors.")
    neighbors = GetProperty(_neighbors, "Neighbors.")


class Distgraphcomm(Topocomm):
    """Distributed graph topology intracommunicator."""

    __slots__ = ()

    _kind = DIST_GRAPH
    _expecting = "a distributed graph communicator"

    def _adjacency(self, call: str) -> DistGraphTopology:
        topo = self._topology(call)
        if not isinstance(topo, DistGraphTopology):
            raise MPIException(ERR_TOPOLOGY, f"{call}: not a distributed graph")
        return topo

    def Get_dist_neighbors_count(self) -> tuple[int, int, bool]:
        """Return adjacency information for a distributed graph topology."""
        topo = self._adjacency("Distgraphcomm.Get_dist_neighbors_count")
        return len(topo.sources), len(topo.destinations), topo.weighted

    def Get_dist_neighbors(
        self,
    ) -> tuple[list[int], list[int], tuple[list[int], list[int]] | None]:
        """Return adjacency information for a distributed graph topology."""
        topo = self._adjacency("Distgraphcomm.Get_dist_neighbors")
        weights = None
        if topo.source_weights is not None and topo.destination_weights is not None:
            weights = (list(topo.source_weights), list(topo.destination_weights))
        return list(topo.sources), list(topo.destinations), weights


#: The handle class of each kind of topology (``Comm.fromhandle`` gives the right one).
CLASS_OF_KIND: Final[dict[int, type[Topocomm]]] = {
    CART: Cartcomm,
    GRAPH: Graphcomm,
    DIST_GRAPH: Distgraphcomm,
}
