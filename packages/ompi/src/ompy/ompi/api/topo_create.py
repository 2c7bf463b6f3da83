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
from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from ..mca.topo import CartMapRequest, Topology
from ..mca.topo.base import cartesian as cart
from ..mca.topo.base import identity
from .checks import as_int
from .communicator import Communicator
from .internal import allgather
from .topo_args import int_list, periods_of

if TYPE_CHECKING:
    from .comm import Comm
    from .topocomm import Cartcomm

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


def _grid_args(
    dims: object, periods: object, size: int, call: str
) -> tuple[tuple[int, ...], tuple[bool, ...]]:
    grid = int_list(dims, f"{call}: dims")
    grid_periods = periods_of(periods, len(grid), call)
    cart.check_grid(grid, size, call)
    return grid, grid_periods


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
