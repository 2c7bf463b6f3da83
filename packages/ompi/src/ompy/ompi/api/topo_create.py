"""Creating communicators with a process topology, and asking any communicator for its own.

``Intracomm.Create_cart``, ``Create_graph``, ``Create_dist_graph_adjacent`` and
``Create_dist_graph`` are collective over the parent.  Each reads its arguments, shares them
with the other members in one allgather (so that a member whose arguments are wrong, or
differ from the others', makes every member raise the same ``MPI.Exception`` instead of leaving
them waiting), places the processes (in their order, or as the topo component decides when
``reorder`` is true), and builds the new communicator with its topology attached before the
coll framework selects for it.  ``Cart_map``/``Graph_map`` are the local placement queries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..accessors import GetProperty
from ..constants import UNDEFINED
from ..errors import ERR_ARG, ERR_RANK
from ..errors import Exception as MPIException
from ..mca.topo import CartMapRequest, DistGraphMapRequest, GraphMapRequest, Topology
from ..mca.topo.base import cartesian as cart
from ..mca.topo.base import distgraph, graph, identity
from .checks import as_int
from .communicator import Communicator
from .info import INFO_NULL, Info, info_items
from .internal import allgather
from .topo_args import int_list, periods_of, sized_int_list, weights_of

if TYPE_CHECKING:
    from .comm import Comm
    from .topocomm import Cartcomm, Distgraphcomm, Graphcomm

_T = TypeVar("_T")


def handle_class(communicator: Communicator, plain: type) -> type:
    """The handle class of ``communicator``: its topology's class, else ``plain``."""
    topo = communicator.topo
    if topo is None:
        return plain
    from .topocomm import CLASS_OF_KIND  # the handle classes build on this module

    return CLASS_OF_KIND[topo.kind]


class CommTopology:
    """``Comm.Get_topology``, ``topology``, ``is_topo`` (``_live`` comes from Comm)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def Get_topology(self) -> int:
        """Return the type of topology (if any) associated with a communicator."""
        topo = self._live("Comm.Get_topology").topo
        return UNDEFINED if topo is None else topo.kind

    def _is_topo(self) -> bool:
        return self._live("Comm.is_topo").topo is not None

    topology = GetProperty(Get_topology, "Topology type.")
    is_topo = GetProperty(_is_topo, "Is a topology.")


def node_ids(c: Communicator) -> tuple[int, ...]:
    """The node of each rank of ``c`` (what a placement component may group processes by)."""
    procs = c.instance.procs
    return tuple(procs[world].node_id for world in c.world_ranks)


def agreed(c: Communicator, call: str, mine: _T | BaseException) -> list[_T]:
    """Every member's parsed arguments, or the same exception on every member.

    ``mine`` is this member's arguments, or the exception reading them raised; a member whose
    arguments failed re-raises its own exception, the others an ``MPI.Exception`` naming it.
    """
    gathered = allgather(c, mine)
    if isinstance(mine, BaseException):
        raise mine
    for rank, value in enumerate(gathered):
        if isinstance(value, BaseException):
            error_class = value.error_class if isinstance(value, MPIException) else ERR_ARG
            raise MPIException(error_class, f"{call}: rank {rank} passed bad arguments: {value}")
    return gathered  # no exception among them


def attempt(read: Callable[[], _T]) -> _T | BaseException:
    """``read()``, or the ``MPI.Exception``/``ValueError``/``TypeError`` it raised."""
    try:
        return read()
    except (MPIException, ValueError, TypeError) as error:
        return error


def members_in_order(c: Communicator, placement: Sequence[int]) -> tuple[int, ...]:
    """The world ranks of the placed processes, ordered by their new ranks."""
    placed = sorted((new, rank) for rank, new in enumerate(placement) if new != UNDEFINED)
    return tuple(c.world_ranks[rank] for _, rank in placed)


class TopologyConstructors:
    """The topology constructors of :class:`~.comm.Intracomm` (its other half)."""

    __slots__ = ()

    def _live(self, call: str) -> Communicator:  # provided by Comm
        raise NotImplementedError

    def _new(
        self,
        parent: Communicator,
        world_ranks: tuple[int, ...] | None,
        how: str,
        hints: dict[str, str] | None = None,
        topo: Topology | None = None,
    ) -> Comm:  # provided by Comm
        raise NotImplementedError

    # -- Cartesian ------------------------------------------------------------------------------

    def Create_cart(
        self,
        dims: Sequence[int],
        periods: Sequence[bool] | None = None,
        reorder: bool = False,
    ) -> Cartcomm:
        """Create cartesian communicator."""
        from .topocomm import Cartcomm

        call = "Intracomm.Create_cart"
        c = self._live(call)
        mine = attempt(lambda: _grid_args(dims, periods, c.size, call))
        grid, grid_periods = same_everywhere(c, call, mine, _describe_grid)
        members = cart.cells(grid)
        if reorder:
            placement = self._cart_placement(c, grid, grid_periods)
        else:
            placement = identity(c.size, members)
        new_rank = placement[c.rank]
        if new_rank == UNDEFINED:
            return Cartcomm._of(self._new(c, None, "CART")._c)
        topo = cart.cart_topology(grid, grid_periods, new_rank)
        made = self._new(c, members_in_order(c, placement), "CART", topo=topo)
        return Cartcomm._of(made._c)

    def _cart_placement(
        self, c: Communicator, dims: tuple[int, ...], periods: tuple[bool, ...]
    ) -> tuple[int, ...]:
        request = CartMapRequest(size=c.size, node_ids=node_ids(c), dims=dims, periods=periods)
        return c.instance.topo.cart_map(request, cart.cells(dims))

    def Cart_map(self, dims: Sequence[int], periods: Sequence[bool] | None = None) -> int:
        """Determine optimal process placement on a Cartesian topology."""
        call = "Intracomm.Cart_map"
        c = self._live(call)
        grid, grid_periods = _grid_args(dims, periods, c.size, call)
        return self._cart_placement(c, grid, grid_periods)[c.rank]

    # -- graphs ---------------------------------------------------------------------------------

    def Create_graph(
        self,
        index: Sequence[int],
        edges: Sequence[int],
        reorder: bool = False,
    ) -> Graphcomm:
        """Create graph communicator."""
        from .topocomm import Graphcomm

        call = "Intracomm.Create_graph"
        c = self._live(call)
        mine = attempt(lambda: _graph_args(index, edges, c.size, call))
        graph_index, graph_edges = same_everywhere(c, call, mine, _describe_graph)
        nodes = len(graph_index)
        if reorder:
            placement = self._graph_placement(c, graph_index, graph_edges)
        else:
            placement = identity(c.size, nodes)
        new_rank = placement[c.rank]
        if new_rank == UNDEFINED:
            return Graphcomm._of(self._new(c, None, "GRAPH")._c)
        topo = graph.graph_topology(graph_index, graph_edges, new_rank)
        made = self._new(c, members_in_order(c, placement), "GRAPH", topo=topo)
        return Graphcomm._of(made._c)

    def _graph_placement(
        self, c: Communicator, index: tuple[int, ...], edges: tuple[int, ...]
    ) -> tuple[int, ...]:
        request = GraphMapRequest(size=c.size, node_ids=node_ids(c), index=index, edges=edges)
        return c.instance.topo.graph_map(request, len(index))

    def Graph_map(self, index: Sequence[int], edges: Sequence[int]) -> int:
        """Determine optimal process placement on a graph topology."""
        call = "Intracomm.Graph_map"
        c = self._live(call)
        graph_index, graph_edges = _graph_args(index, edges, c.size, call)
        return self._graph_placement(c, graph_index, graph_edges)[c.rank]

    # -- distributed graphs ---------------------------------------------------------------------

    def Create_dist_graph_adjacent(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sources: Sequence[int] | None,
        destinations: Sequence[int] | None,
        sourceweights: Sequence[int] | None = None,
        destweights: Sequence[int] | None = None,
        info: Info = INFO_NULL,
        reorder: bool = False,
    ) -> Distgraphcomm:
        """Create distributed graph communicator."""
        from .topocomm import Distgraphcomm

        call = "Intracomm.Create_dist_graph_adjacent"
        c = self._live(call)
        hints = info_items(info, call)

        def read() -> _Adjacent:
            ins = () if sources is None else int_list(sources, f"{call}: sources")
            outs = () if destinations is None else int_list(destinations, f"{call}: destinations")
            _check_ranks(ins, c.size, f"{call}: sources")
            _check_ranks(outs, c.size, f"{call}: destinations")
            in_weights = weights_of(sourceweights, len(ins), f"{call}: sourceweights")
            out_weights = weights_of(destweights, len(outs), f"{call}: destweights")
            if (in_weights is None) != (out_weights is None):
                raise MPIException(
                    ERR_ARG,
                    f"{call}: sourceweights and destweights must both be weights or both be "
                    "UNWEIGHTED (or None)",
                )
            return ins, outs, in_weights, out_weights

        everyone = agreed(c, call, attempt(read))
        weighted = _weighted([(len(a[0]) + len(a[1]), a[2] is not None) for a in everyone], call)
        edges = tuple(
            (rank, d, out_weights[i] if out_weights is not None else 1)
            for rank, (_, outs, _, out_weights) in enumerate(everyone)
            for i, d in enumerate(outs)
        )
        placement = self._dist_graph_placement(c, edges, weighted, hints, reorder)
        ins, outs, in_weights, out_weights = everyone[c.rank]
        topo = distgraph.adjacent_topology(
            ins, outs, in_weights, out_weights, placement=placement, weighted=weighted
        )
        made = self._new(c, members_in_order(c, placement), "DIST_GRAPH", hints, topo)
        return Distgraphcomm._of(made._c)

    def Create_dist_graph(  # noqa: PLR0917 (mpi4py's signature)
        self,
        sources: Sequence[int],
        degrees: Sequence[int],
        destinations: Sequence[int],
        weights: Sequence[int] | None = None,
        info: Info = INFO_NULL,
        reorder: bool = False,
    ) -> Distgraphcomm:
        """Create distributed graph communicator."""
        from .topocomm import Distgraphcomm

        call = "Intracomm.Create_dist_graph"
        c = self._live(call)
        hints = info_items(info, call)

        def read() -> tuple[tuple[distgraph.Edge, ...], bool]:
            origins = int_list(sources, f"{call}: sources")
            counts = sized_int_list(degrees, len(origins), f"{call}: degrees")
            for i, count in enumerate(counts):
                if count < 0:
                    raise MPIException(
                        ERR_ARG, f"{call}: degrees[{i}] is {count}; degrees must be >= 0"
                    )
            targets = sized_int_list(destinations, sum(counts), f"{call}: destinations")
            _check_ranks(origins, c.size, f"{call}: sources")
            _check_ranks(targets, c.size, f"{call}: destinations")
            given = weights_of(weights, len(targets), f"{call}: weights")
            starts = [
                origin for origin, count in zip(origins, counts, strict=True) for _ in range(count)
            ]
            edges = tuple(
                (s, d, given[i] if given is not None else 1)
                for i, (s, d) in enumerate(zip(starts, targets, strict=True))
            )
            return edges, given is not None

        everyone = agreed(c, call, attempt(read))
        weighted = _weighted([(len(edges), named) for edges, named in everyone], call)
        edges = tuple(edge for mine, _ in everyone for edge in mine)
        placement = self._dist_graph_placement(c, edges, weighted, hints, reorder)
        topo = distgraph.adjacency(edges, c.rank, placement, weighted)
        made = self._new(c, members_in_order(c, placement), "DIST_GRAPH", hints, topo)
        return Distgraphcomm._of(made._c)

    def _dist_graph_placement(
        self,
        c: Communicator,
        edges: tuple[distgraph.Edge, ...],
        weighted: bool,
        hints: dict[str, str],
        reorder: bool,
    ) -> tuple[int, ...]:
        if not reorder:
            return identity(c.size, c.size)
        request = DistGraphMapRequest(
            size=c.size, node_ids=node_ids(c), hints=hints, edges=edges, weighted=weighted
        )
        return c.instance.topo.dist_graph_map(request)


def _grid_args(
    dims: object, periods: object, size: int, call: str
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    grid = int_list(dims, f"{call}: dims")
    grid_periods = periods_of(periods, len(grid), call)
    cart.check_grid(grid, size, call)
    return grid, grid_periods


def _graph_args(
    index: object, edges: object, size: int, call: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    graph_edges = int_list(edges, f"{call}: edges")
    graph_index = graph.standard_index(int_list(index, f"{call}: index"), len(graph_edges))
    graph.check_graph(graph_index, graph_edges, size, call)
    return graph_index, graph_edges


def _describe_graph(args: tuple[tuple[int, ...], tuple[int, ...]]) -> str:
    return f"the graph index={list(args[0])} edges={list(args[1])}"


#: One process's ``Create_dist_graph_adjacent`` arguments, read.
_Adjacent = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...] | None, tuple[int, ...] | None]


def _check_ranks(ranks: Sequence[int], size: int, what: str) -> None:
    for i, rank in enumerate(ranks):
        if not 0 <= rank < size:
            raise MPIException(
                ERR_RANK, f"{what}[{i}] is {rank}; ranks of this communicator are 0..{size - 1}"
            )


def _weighted(sides: list[tuple[int, bool]], call: str) -> bool:
    """Whether the graph is weighted: every process that has edges must agree.

    ``sides[r]`` is (how many edges rank ``r`` gave, whether it gave weights); a process
    without edges may say either (MPI asks for WEIGHTS_EMPTY there, ``None`` is forgiven).
    """
    weighted = [rank for rank, (count, named) in enumerate(sides) if named]
    if not weighted:
        return False
    bare = [rank for rank, (count, named) in enumerate(sides) if count and not named]
    if bare:
        raise MPIException(
            ERR_ARG,
            f"{call}: rank {weighted[0]} gave edge weights but rank {bare[0]} gave edges "
            "without (UNWEIGHTED); a graph is weighted everywhere or nowhere",
        )
    return True


def _describe_grid(args: tuple[tuple[int, ...], tuple[bool, ...]]) -> str:
    return f"the grid {list(args[0])} with periods {[int(p) for p in args[1]]}"


def same_everywhere(
    c: Communicator, call: str, mine: _T | BaseException, describe: Callable[[_T], str]
) -> _T:
    """The arguments every member passed, which must be the same (see :func:`agreed`)."""
    everyone = agreed(c, call, mine)
    first = everyone[0]
    for rank, other in enumerate(everyone):
        if other != first:
            raise MPIException(
                ERR_ARG,
                f"{call}: rank {rank} passed {describe(other)} but rank 0 passed "
                f"{describe(first)}; every member must pass the same",
            )
    return first


def Compute_dims(nnodes: int, dims: int | Sequence[int]) -> list[int]:
    """Return a balanced distribution of processes per coordinate direction."""
    call = "Compute_dims"
    nnodes = as_int(nnodes, f"{call}: nnodes")
    if isinstance(dims, Sequence) or not _is_integral(dims):
        given = int_list(dims, f"{call}: dims")
    else:
        ndims = as_int(dims, f"{call}: dims")
        if ndims < 0:
            raise MPIException(ERR_ARG, f"{call}: dims is {ndims}; a number of dimensions is >= 0")
        given = (0,) * ndims
    return cart.compute_dims(nnodes, given, call)


def _is_integral(value: Any) -> bool:
    try:
        as_int(value, "")
    except TypeError:
        return False
    return True
