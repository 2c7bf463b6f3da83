"""Argument checks of the point-to-point calls, with MPI's error classes and a clear detail.

The PML trusts its arguments: ranks are in range, tags are valid, ``PROC_NULL`` never reaches
it.  These checks are the API layer's side of that contract.  Each returns the value as a plain
int so that numpy integers and other index-like objects are accepted, as mpi4py accepts them.
"""

from __future__ import annotations

import operator
from typing import SupportsIndex

from ..constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from ..errors import ERR_RANK, ERR_TAG
from ..errors import Exception as MPIException


def as_int(value: object, what: str) -> int:
    """``value`` as an int, or a TypeError that names the argument."""
    if type(value) is int:
        return value
    if isinstance(value, SupportsIndex):  # numpy integers, and anything with __index__
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{what} must be an int, not {type(value).__name__} {value!r}")


def dest_rank(dest: object, size: int, call: str) -> int:
    """A destination: ``0..size-1`` or ``PROC_NULL``."""
    dest = as_int(dest, f"{call}: dest")
    if 0 <= dest < size or dest == PROC_NULL:
        return dest
    raise MPIException(
        ERR_RANK,
        f"{call}: destination rank {dest} is not in the communicator of size {size} "
        f"(valid: 0..{size - 1} or PROC_NULL)",
    )


def source_rank(source: object, size: int, call: str) -> int:
    """A source: ``0..size-1``, ``ANY_SOURCE`` or ``PROC_NULL``."""
    source = as_int(source, f"{call}: source")
    if 0 <= source < size or source in (ANY_SOURCE, PROC_NULL):
        return source
    raise MPIException(
        ERR_RANK,
        f"{call}: source rank {source} is not in the communicator of size {size} "
        f"(valid: 0..{size - 1}, ANY_SOURCE or PROC_NULL)",
    )


def send_tag(tag: object, tag_ub: int, call: str) -> int:
    """A send tag: ``0..TAG_UB``."""
    tag = as_int(tag, f"{call}: tag")
    if 0 <= tag <= tag_ub:
        return tag
    raise MPIException(
        ERR_TAG,
        f"{call}: tag {tag} is invalid for a send (valid: 0..{tag_ub}, the TAG_UB attribute; "
        "ANY_TAG and negative tags are for receives or reserved)",
    )


def recv_tag(tag: object, tag_ub: int, call: str) -> int:
    """A receive (or probe) tag: ``0..TAG_UB`` or ``ANY_TAG``."""
    tag = as_int(tag, f"{call}: tag")
    if 0 <= tag <= tag_ub or tag == ANY_TAG:
        return tag
    raise MPIException(
        ERR_TAG,
        f"{call}: tag {tag} is invalid for a receive (valid: 0..{tag_ub} or ANY_TAG; negative "
        "tags are reserved for the library)",
    )
