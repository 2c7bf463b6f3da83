"""Reading the arguments of the topology calls as mpi4py reads them.

Integer arrays are sequences of ints (numpy integers too); a wrong length is a ``ValueError``,
as mpi4py's array checks make it.  ``periods`` may be ``None`` (no dimension periodic) or a
single bool (every dimension); weights may be ``None``/``UNWEIGHTED`` (unweighted),
``WEIGHTS_EMPTY`` (weighted, but no edges here) or a sequence of ints.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from ..errors import ERR_ARG
from ..errors import Exception as MPIException
from .checks import as_int

#: ``MPI.UNWEIGHTED``: an unweighted graph (Open MPI's ``(int *) 2``).
UNWEIGHTED: Final = 2
#: ``MPI.WEIGHTS_EMPTY``: weighted, with no edge at this process (Open MPI's ``(int *) 3``).
WEIGHTS_EMPTY: Final = 3


def int_list(values: object, what: str) -> tuple[int, ...]:
    """A sequence of ints (any iterable of them: a list, a tuple, a numpy array)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{what} must be a sequence of ints, not {type(values).__name__}")
    return tuple(as_int(value, f"{what}[{i}]") for i, value in enumerate(values))


def sized_int_list(values: object, length: int, what: str) -> tuple[int, ...]:
    """A sequence of exactly ``length`` ints."""
    found = int_list(values, what)
    if len(found) != length:
        raise ValueError(f"{what} has {len(found)} entries; expecting {length}")
    return found


def periods_of(periods: object, ndims: int, call: str) -> tuple[bool, ...]:
    """``periods`` as one bool per dimension (``None``: none periodic; a bool: all alike)."""
    if periods is None:
        return (False,) * ndims
    if isinstance(periods, bool):
        return (periods,) * ndims
    return tuple(bool(p) for p in sized_int_list(periods, ndims, f"{call}: periods"))


def weights_of(weights: object, degree: int, what: str) -> tuple[int, ...] | None:
    """``None`` for an unweighted side, else one weight per edge (``()`` for WEIGHTS_EMPTY)."""
    if weights is None or (type(weights) is int and weights == UNWEIGHTED):
        return None
    if type(weights) is int and weights == WEIGHTS_EMPTY:
        if degree > 0:
            raise ValueError(f"{what}: empty weights (WEIGHTS_EMPTY) but nonzero degree {degree}")
        return ()
    found = sized_int_list(weights, degree, what)
    for i, weight in enumerate(found):
        if weight < 0:
            raise MPIException(ERR_ARG, f"{what}[{i}] is {weight}; weights must be >= 0")
    return found
