"""Cartesian grids: coordinates, ranks, shifts, neighbours, sub-grids and ``Compute_dims``.

Ranks are laid out row-major (the last dimension varies fastest), as MPI specifies; every
function here is local arithmetic on the grid's description, which every member holds whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ....constants import PROC_NULL
from ....errors import ERR_ARG, ERR_DIMS, ERR_RANK
from ....errors import Exception as MPIException
from ..interface import CART, CartTopology


def cells(dims: Sequence[int]) -> int:
    """The number of processes of a grid (1 for the zero-dimensional grid)."""
    return math.prod(dims)


def coords_of(rank: int, dims: Sequence[int]) -> tuple[int, ...]:
    """The coordinates of ``rank`` (in ``0..cells(dims)-1``) on the grid."""
    coords = []
    for extent in reversed(dims):
        rank, coord = divmod(rank, extent)
        coords.append(coord)
    return tuple(reversed(coords))


def rank_at(coords: Sequence[int], dims: Sequence[int]) -> int:
    """The rank at in-range ``coords`` (no checks: see :func:`rank_of` for a program's)."""
    rank = 0
    for coord, extent in zip(coords, dims, strict=True):
        rank = rank * extent + coord
    return rank


def rank_of(topology: CartTopology, coords: Sequence[int], call: str) -> int:
    """The rank at ``coords``: periodic dimensions wrap, others must hold the coordinate."""
    dims, periods = topology.dims, topology.periods
    if len(coords) != len(dims):
        raise ValueError(
            f"{call}: {len(coords)} coordinates given for a {len(dims)}-dimensional grid"
        )
    wrapped = []
    for axis, (given, extent, periodic) in enumerate(zip(coords, dims, periods, strict=True)):
        coord = given % extent if periodic else given
        if not 0 <= coord < extent:
            raise MPIException(
                ERR_ARG,
                f"{call}: coordinate {coord} of dimension {axis} is outside the grid "
                f"(0..{extent - 1}) and that dimension is not periodic",
            )
        wrapped.append(coord)
    return rank_at(wrapped, dims)


def coords_checked(topology: CartTopology, rank: int, call: str) -> tuple[int, ...]:
    """The coordinates of ``rank``, which must be a rank of the grid."""
    size = cells(topology.dims)
    if not 0 <= rank < size:
        raise MPIException(ERR_RANK, f"{call}: rank {rank} is not in the grid (0..{size - 1})")
    return coords_of(rank, topology.dims)


def neighbour(topology: CartTopology, axis: int, disp: int) -> int:
    """The rank ``disp`` steps along ``axis`` from this process, or ``PROC_NULL`` off the grid."""
    coords = list(topology.coords)
    extent = topology.dims[axis]
    coord = coords[axis] + disp
    if topology.periods[axis]:
        coord %= extent
    elif not 0 <= coord < extent:
        return PROC_NULL
    coords[axis] = coord
    return rank_at(coords, topology.dims)


def shift(topology: CartTopology, direction: int, disp: int, call: str) -> tuple[int, int]:
    """``Cart_shift``: (the rank ``disp`` steps back, the rank ``disp`` steps forward)."""
    ndims = len(topology.dims)
    if not 0 <= direction < ndims:
        raise MPIException(
            ERR_DIMS,
            f"{call}: direction {direction} is not a dimension of this {ndims}-dimensional grid "
            f"(0..{ndims - 1})",
        )
    return neighbour(topology, direction, -disp), neighbour(topology, direction, disp)


def cart_topology(dims: Sequence[int], periods: Sequence[bool], rank: int) -> CartTopology:
    """The topology of the process of ``rank`` on the grid (neighbours in the MPI order)."""
    dims, periods = tuple(dims), tuple(bool(p) for p in periods)
    coords = coords_of(rank, dims)
    placed = CartTopology(
        kind=CART, sources=(), destinations=(), dims=dims, periods=periods, coords=coords
    )
    around = tuple(neighbour(placed, axis, disp) for axis in range(len(dims)) for disp in (-1, 1))
    return CartTopology(
        kind=CART, sources=around, destinations=around, dims=dims, periods=periods, coords=coords
    )


def check_grid(dims: Sequence[int], size: int, call: str) -> None:
    """A grid a communicator of ``size`` processes can hold: extents >= 1, cells <= size."""
    for axis, extent in enumerate(dims):
        if extent < 1:
            raise MPIException(
                ERR_DIMS, f"{call}: dimension {axis} has extent {extent}; extents must be >= 1"
            )
    needed = cells(dims)
    if needed > size:
        raise MPIException(
            ERR_DIMS,
            f"{call}: the grid {list(dims)} has {needed} cells but the communicator has only "
            f"{size} process{'es' if size != 1 else ''}",
        )


def sub_grid(
    topology: CartTopology, remain: Sequence[bool]
) -> tuple[tuple[int, ...], CartTopology]:
    """``Cart_sub``: the grid ranks of this process's sub-grid, in order, and its topology there.

    The sub-grid keeps the dimensions where ``remain`` is true and holds the processes whose
    coordinates in the other dimensions equal this process's; ordering them by grid rank is
    ordering them row-major on the kept dimensions, so a member's rank there is its index.
    """
    kept = [axis for axis, keep in enumerate(remain) if keep]
    dims = tuple(topology.dims[axis] for axis in kept)
    periods = tuple(topology.periods[axis] for axis in kept)
    members = []
    for rank in range(cells(topology.dims)):
        coords = coords_of(rank, topology.dims)
        if all(
            coords[axis] == topology.coords[axis] for axis in range(len(remain)) if not remain[axis]
        ):
            members.append(rank)
    mine = rank_at([topology.coords[axis] for axis in kept], dims)
    return tuple(members), cart_topology(dims, periods, mine)


# -- Compute_dims -------------------------------------------------------------------------------


def compute_dims(nnodes: int, dims: Sequence[int], call: str) -> list[int]:
    """``MPI_Dims_create``: fill the zero entries of ``dims`` so that the product is ``nnodes``.

    Positive entries stay as they are; the free ones get the most balanced factorization of
    what is left (the smallest difference between the largest and the smallest factor), in
    non-increasing order.
    """
    if nnodes < 1:
        raise MPIException(ERR_DIMS, f"{call}: nnodes is {nnodes}; it must be >= 1")
    for axis, extent in enumerate(dims):
        if extent < 0:
            raise MPIException(
                ERR_DIMS, f"{call}: dims[{axis}] is {extent}; entries must be >= 0 (0: free)"
            )
    fixed = math.prod(extent for extent in dims if extent > 0)
    free = sum(1 for extent in dims if extent == 0)
    if nnodes % fixed or (free == 0 and fixed != nnodes):
        raise MPIException(
            ERR_DIMS,
            f"{call}: the given dimensions {list(dims)} (product {fixed}) cannot make a grid of "
            f"{nnodes} processes",
        )
    factors = iter(balanced_factors(nnodes // fixed, free))
    return [extent if extent > 0 else next(factors) for extent in dims]


def balanced_factors(count: int, parts: int) -> tuple[int, ...]:
    """The non-increasing ``parts``-tuple with product ``count`` whose factors differ least."""
    if parts == 0:
        return ()
    if count == 1:
        return (1,) * parts
    divisors = _divisors(count)
    best: tuple[int, ...] | None = None
    for candidate in _factorizations(count, parts, count, divisors):
        if best is None or (candidate[0] - candidate[-1], candidate) < (best[0] - best[-1], best):
            best = candidate
    assert best is not None, "(count, 1, ..., 1) is always a factorization"
    return best


def _divisors(count: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(count) + 1) if count % d == 0]
    return sorted(set(small + [count // d for d in small]))


def _factorizations(
    count: int, parts: int, largest: int, divisors: list[int]
) -> list[tuple[int, ...]]:
    """Every non-increasing ``parts``-tuple of divisors with product ``count``, each <= largest."""
    if parts == 1:
        return [(count,)] if count <= largest else []
    if count == 1:
        return [(1,) * parts]
    found = []
    for factor in divisors:
        if factor > largest or factor > count:
            break
        if count % factor or factor**parts < count:
            continue  # the first factor is the largest: it must reach count's parts-th root
        for rest in _factorizations(count // factor, parts - 1, factor, divisors):
            found.append((factor, *rest))
    return found
