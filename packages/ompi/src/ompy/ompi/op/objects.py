"""The predefined operations applied to Python objects: what ``MPI.SUM(x, y)`` computes.

The lowercase reductions (``comm.reduce``, ``allreduce``, ``scan``) combine pickled objects
with these, folding left in rank order: ``op(op(x0, x1), x2)``.  They are mpi4py's, to the
letter: ``SUM`` is ``+`` (so lists concatenate), ``MAX`` keeps ``x`` unless ``y > x``, the
logical operations return ``bool``, ``MAXLOC``/``MINLOC`` take ``(value, index)`` pairs and
break ties by the lower index, ``REPLACE`` gives ``y`` and ``NO_OP`` gives ``x``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ..mca.op import Intrinsic


def op_max(x: Any, y: Any) -> Any:
    """Maximum (``x`` on ties and incomparable values)."""
    return y if y > x else x


def op_min(x: Any, y: Any) -> Any:
    """Minimum (``x`` on ties and incomparable values)."""
    return y if y < x else x


def op_sum(x: Any, y: Any) -> Any:
    """Sum: ``x + y``."""
    return x + y


def op_prod(x: Any, y: Any) -> Any:
    """Product: ``x * y``."""
    return x * y


def op_land(x: Any, y: Any) -> bool:
    """Logical and of the truth values."""
    return bool(x) & bool(y)


def op_lor(x: Any, y: Any) -> bool:
    """Logical or of the truth values."""
    return bool(x) | bool(y)


def op_lxor(x: Any, y: Any) -> bool:
    """Logical exclusive or of the truth values."""
    return bool(x) ^ bool(y)


def op_band(x: Any, y: Any) -> Any:
    """Bitwise and: ``x & y``."""
    return x & y


def op_bor(x: Any, y: Any) -> Any:
    """Bitwise or: ``x | y``."""
    return x | y


def op_bxor(x: Any, y: Any) -> Any:
    """Bitwise exclusive or: ``x ^ y``."""
    return x ^ y


def op_maxloc(x: Any, y: Any) -> tuple[Any, Any]:
    """The ``(value, index)`` pair with the larger value; the lower index on equal values."""
    u, i = x
    v, j = y
    if u > v:
        return u, i
    if v > u:
        return v, j
    if j < i:
        return v, j
    return u, i


def op_minloc(x: Any, y: Any) -> tuple[Any, Any]:
    """The ``(value, index)`` pair with the smaller value; the lower index on equal values."""
    u, i = x
    v, j = y
    if u < v:
        return u, i
    if v < u:
        return v, j
    if j < i:
        return v, j
    return u, i


def op_replace(x: Any, y: Any) -> Any:
    """Replace: ``y`` (mpi4py's object semantics)."""
    return y


def op_no_op(x: Any, y: Any) -> Any:
    """No operation: ``x`` (mpi4py's object semantics)."""
    return x


#: The object form of each predefined operation.
OBJECT_FUNCTIONS: Final[dict[Intrinsic, Callable[[Any, Any], Any]]] = {
    Intrinsic.MAX: op_max,
    Intrinsic.MIN: op_min,
    Intrinsic.SUM: op_sum,
    Intrinsic.PROD: op_prod,
    Intrinsic.LAND: op_land,
    Intrinsic.BAND: op_band,
    Intrinsic.LOR: op_lor,
    Intrinsic.BOR: op_bor,
    Intrinsic.LXOR: op_lxor,
    Intrinsic.BXOR: op_bxor,
    Intrinsic.MAXLOC: op_maxloc,
    Intrinsic.MINLOC: op_minloc,
    Intrinsic.REPLACE: op_replace,
    Intrinsic.NO_OP: op_no_op,
}
